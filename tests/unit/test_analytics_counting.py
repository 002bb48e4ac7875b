"""Lines and zones fed frame by frame: crossings on, near and beyond a line's ends, exactly on
the line, jitter, zones (concave ones too), tracks coming back, lost, and streams ending."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from app.analytics.events import AnalyticsEvent, Direction, EventKind, LeaveReason
from app.analytics.heatmap import HeatMap
from app.analytics.stream import LOST_AFTER, StreamAnalytics
from app.analytics.zones_file import LineSpec, ZonesConfig, ZoneSpec
from app.inference.result import Detection

FPS = 10.0
DOOR = LineSpec("door", (100.0, 0.0), (100.0, 200.0))  # top to bottom: in = left to right
ROOM = ZoneSpec("room", ((120.0, 0.0), (200.0, 0.0), (200.0, 200.0), (120.0, 200.0)))


def face(x: float, y: float, track: int | None = 1, class_id: int = 0, label: str = "face") -> Detection:
    """A box whose anchor (bottom centre) is at (x, y)."""
    return Detection((x - 10, y - 30, x + 10, y), 0.9, class_id, label, track_id=track)


def run(
    analytics: StreamAnalytics, frames: Iterable[list[Detection]], start: int = 0
) -> list[AnalyticsEvent]:
    events: list[AnalyticsEvent] = []
    for i, detections in enumerate(frames, start):
        events += analytics.update(i, i / FPS, detections)
    return events


def path(xs: Iterable[float], y: float = 100.0, track: int = 1) -> list[list[Detection]]:
    return [[face(x, y, track)] for x in xs]


def crossings(events: list[AnalyticsEvent]) -> list[tuple[str, int]]:
    return [(e.direction.value, e.frame) for e in events if e.kind is EventKind.LINE_CROSSED and e.direction]


def line_only(**kwargs: object) -> StreamAnalytics:
    return StreamAnalytics(ZonesConfig(lines=(DOOR,)), frame_period_s=1 / FPS, **kwargs)  # type: ignore[arg-type]


def test_in_and_out_once_per_crossing_with_the_frame_it_began() -> None:
    analytics = line_only()
    xs = [80, 90, 110, 120, 130, 120, 95, 85, 80, 105, 115]
    events = run(analytics, path(xs))
    # Confirmed on the second frame past the line, dated from the first.
    assert crossings(events) == [("in", 2), ("out", 6), ("in", 9)]
    door = analytics.summary()["lines"]["door"]
    assert door == {"in": 2, "out": 1, "by_class": {"face": {"in": 2, "out": 1}}}
    event = events[0]
    assert event.to_record() == {
        "event": "line_crossed",
        "line": "door",
        "direction": "in",
        "track_id": 1,
        "class_id": 0,
        "label": "face",
        "frame": 2,
        "time_s": 0.2,
    }


def test_exactly_on_the_line_is_no_side() -> None:
    analytics = line_only()
    # Touching the line and going back: no crossing; resting on it, then going on: one.
    events = run(analytics, path([80, 90, 100, 100, 90, 80, 100, 100, 100, 110, 120]))
    assert crossings(events) == [("in", 9)]


def test_jitter_across_the_line_does_not_count() -> None:
    analytics = line_only()
    # One frame over the line at a time is jitter (two in a row confirm a crossing).
    events = run(analytics, path([95, 102, 97, 103, 96, 101, 98, 104, 99]))
    assert crossings(events) == []
    events = run(analytics, path([102, 103]), start=9)
    assert crossings(events) == [("in", 9)]


def test_with_one_confirming_frame_every_side_change_counts() -> None:
    analytics = line_only(confirm_frames=1)
    assert crossings(run(analytics, path([95, 102, 97, 103]))) == [("in", 1), ("out", 2), ("in", 3)]


def test_a_crossing_counts_within_the_segment_only() -> None:
    analytics = StreamAnalytics(ZonesConfig(lines=(DOOR,)), frame_period_s=1 / FPS)
    frames = [
        [face(80, 100, 1), face(80, 0, 2), face(80, 201, 3), face(80, 300, 4)],
        [face(90, 100, 1), face(90, 0, 2), face(90, 201, 3), face(90, 300, 4)],
        [face(110, 100, 1), face(110, 0, 2), face(110, 201, 3), face(110, 300, 4)],
        [face(120, 100, 1), face(120, 0, 2), face(120, 201, 3), face(120, 300, 4)],
    ]
    events = run(analytics, frames)
    # Through the middle and exactly through the top end count; a pixel beyond the bottom
    # end, or far beyond it, does not.
    assert sorted(e.track_id for e in events) == [1, 2]


def test_going_round_an_end_of_the_line_is_no_crossing() -> None:
    analytics = line_only()
    # Left of the line, below its bottom end, round to the right, then up beside it.
    points = [(80, 150), (80, 230), (100, 240), (120, 230), (120, 150), (120, 100)]
    events = run(analytics, [[face(x, y)] for x, y in points])
    assert crossings(events) == []
    # Back through it from the right: out.
    assert crossings(run(analytics, path([90, 80]), start=6)) == [("out", 6)]


def test_a_diagonal_move_through_the_end_region() -> None:
    analytics = line_only()
    # Moves that meet the line at y = 195 (inside) and, for the other track, at y = 205 (outside).
    frames = [
        [face(90, 190, 1), face(90, 200, 2)],
        [face(110, 200, 1), face(110, 210, 2)],
        [face(120, 205, 1), face(120, 215, 2)],
    ]
    events = run(analytics, frames)
    assert [(e.track_id, e.direction) for e in events] == [(1, Direction.IN)]


def test_by_class_and_only_tracked_detections() -> None:
    analytics = line_only()
    frames = [
        [face(80, 50, 1, 0, "face"), face(80, 150, 2, 1, "person"), face(80, 100, None)],
        [face(110, 50, 1, 0, "face"), face(110, 150, 2, 1, "person"), face(110, 100, None)],
        [face(120, 50, 1, 0, "face"), face(120, 150, 2, 1, "person"), face(120, 100, None)],
    ]
    run(analytics, frames)
    assert analytics.summary()["lines"]["door"] == {
        "in": 2,
        "out": 0,
        "by_class": {"face": {"in": 1, "out": 0}, "person": {"in": 1, "out": 0}},
    }


def test_an_older_frame_is_ignored() -> None:
    analytics = line_only()
    run(analytics, path([80, 90, 110, 120]))
    assert analytics.update(2, 0.2, [face(80, 100)]) == []
    assert analytics.snapshot().lines == {"door": (1, 0)}


def zone_only(zone: ZoneSpec = ROOM) -> StreamAnalytics:
    return StreamAnalytics(ZonesConfig(zones=(zone,)), frame_period_s=1 / FPS)


def test_a_visit_lasts_from_the_first_frame_inside_to_the_end_of_the_last() -> None:
    analytics = zone_only()
    xs = [100, 110, 120, 130, 140, 150, 140, 130, 115, 100, 90]  # inside on frames 2..7
    events = run(analytics, path(xs))
    kinds = [(e.kind, e.frame) for e in events]
    assert kinds == [(EventKind.ZONE_ENTERED, 2), (EventKind.ZONE_LEFT, 7)]
    left = events[1]
    assert left.reason is LeaveReason.LEFT and left.dwell_s == pytest.approx(0.6)  # 6 frames at 10 fps
    zone = analytics.summary()["zones"]["room"]
    assert zone == {"max_occupancy": 1, "entries": 1, "total_dwell_s": 0.6, "dwell_s_by_track": {"1": 0.6}}


def test_a_track_that_comes_back_adds_its_visits() -> None:
    analytics = zone_only()
    xs = [110, 130, 140, 110, 100, 100, 130, 140, 150, 110, 100]  # inside 1..2, then 6..8
    events = run(analytics, path(xs))
    assert [e.kind for e in events] == [EventKind.ZONE_ENTERED, EventKind.ZONE_LEFT] * 2
    zone = analytics.summary()["zones"]["room"]
    assert zone["entries"] == 2 and zone["dwell_s_by_track"] == {"1": pytest.approx(0.2 + 0.3)}


def test_jitter_at_the_edge_of_a_zone_is_one_visit() -> None:
    analytics = zone_only()
    xs = [110, 125, 130, 118, 126, 119, 130, 140, 110, 100]  # single frames outside: jitter
    events = run(analytics, path(xs))
    assert [(e.kind, e.frame) for e in events] == [(EventKind.ZONE_ENTERED, 1), (EventKind.ZONE_LEFT, 7)]
    assert events[1].dwell_s == pytest.approx(0.7)


def test_occupancy_now_and_at_most() -> None:
    analytics = zone_only()
    run(analytics, [[face(130, 50, 1), face(130, 100, 2), face(50, 100, 3)]] * 3)
    snapshot = analytics.snapshot()
    assert snapshot.zones == {"room": (2, 2)} and sorted(snapshot.inside["room"]) == [1, 2]
    run(analytics, [[face(130, 50, 1), face(50, 100, 2)]] * 3, start=3)
    assert analytics.snapshot().zones == {"room": (1, 2)}


def test_a_lost_track_ends_its_visit_at_its_last_frame_seen() -> None:
    analytics = zone_only()
    events = run(analytics, path([130, 130, 130, 130]))  # inside on frames 0..3, then never seen
    events += run(analytics, [[] for _ in range(LOST_AFTER + 2)], start=4)
    left = [e for e in events if e.kind is EventKind.ZONE_LEFT]
    assert len(left) == 1 and left[0].reason is LeaveReason.LOST
    assert left[0].frame == 3 and left[0].dwell_s == pytest.approx(0.4)
    assert analytics.snapshot().zones == {"room": (0, 1)}
    # The same id seen again later is a new track: a new visit.
    events = run(analytics, path([130, 130, 130]), start=4 + LOST_AFTER + 2)
    assert [e.kind for e in events] == [EventKind.ZONE_ENTERED]


def test_missed_frames_inside_do_not_end_a_visit() -> None:
    analytics = zone_only()
    frames = path([130, 130]) + [[]] * (LOST_AFTER - 1) + path([130, 130, 100, 100])
    events = run(analytics, frames)
    assert [e.kind for e in events] == [EventKind.ZONE_ENTERED, EventKind.ZONE_LEFT]
    assert events[1].dwell_s == pytest.approx((LOST_AFTER + 3) / FPS)  # frames 0..LOST_AFTER + 2


def test_the_end_of_the_stream_closes_every_visit() -> None:
    analytics = zone_only()
    run(analytics, path([100, 130, 130, 130, 130]))
    closing = analytics.finish()
    assert [(e.kind, e.reason, e.frame) for e in closing] == [(EventKind.ZONE_LEFT, LeaveReason.ENDED, 4)]
    assert closing[0].dwell_s == pytest.approx(0.4)
    assert analytics.finish() == [] and analytics.update(9, 0.9, [face(130, 100)]) == []


def test_a_concave_zone_is_left_through_its_notch() -> None:
    # A "U" open at the top: the notch between the arms is outside.
    u = ZoneSpec("u", ((0, 0), (40, 0), (40, 50), (60, 50), (60, 0), (100, 0), (100, 100), (0, 100)))
    analytics = zone_only(u)
    # Along y = 25 from the left arm, through the notch, into the right arm.
    events = run(analytics, path([20, 30, 45, 50, 55, 70, 80], y=25))
    assert [(e.kind, e.frame) for e in events] == [
        (EventKind.ZONE_ENTERED, 0),
        (EventKind.ZONE_LEFT, 1),
        (EventKind.ZONE_ENTERED, 5),
    ]


def test_live_stream_times_measure_the_frame_period() -> None:
    """Without a frame period (a live stream), it is measured from the capture times given."""
    analytics = StreamAnalytics(ZonesConfig(zones=(ROOM,)))
    times = [10.0, 10.04, 10.08, 10.12, 10.16]
    for i, (t, x) in enumerate(zip(times, [130, 130, 130, 100, 100], strict=True)):
        analytics.update(i, t, [face(x, 100)])
    assert analytics.frame_period_s == pytest.approx(0.04)
    assert analytics.summary()["zones"]["room"]["total_dwell_s"] == pytest.approx(0.12)  # 10.00..10.12


def test_the_heat_map_takes_every_detection_for_the_time_it_stands_for() -> None:
    heat = HeatMap(200, 200, cell=20)
    analytics = StreamAnalytics(ZonesConfig(lines=(DOOR,)), frame_period_s=0.1, heatmap=heat)
    run(analytics, [[face(30, 50, None), face(150, 150, 7)]] * 5)
    density = heat.density()
    assert density[2, 1] == pytest.approx(0.5) and density[7, 7] == pytest.approx(0.5)
    assert density.sum() == pytest.approx(1.0)


def test_a_track_is_lost_only_once_the_tracker_has_given_it_up() -> None:
    from app.pipeline.tracking import MAX_MISSED  # analytics sits below the pipeline: no import there

    assert LOST_AFTER == MAX_MISSED + 1
