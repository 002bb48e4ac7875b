"""Track ids through Norfair, the track book and flicker figures, frame ordering."""

from __future__ import annotations

import json
import threading

from app.inference.result import Detection, InferenceResult, Status
from app.pipeline.frame_order import StreamsInOrder
from app.pipeline.tracking import ObjectTracker, StreamTrackers, tracked_fraction


def det(x: float, y: float = 100.0, class_id: int = 0, size: float = 80.0) -> Detection:
    return Detection((x, y, x + size, y + size), 0.9, class_id, f"class {class_id}")


def result(
    frame: int | None, detections: list[Detection], source: str = "v.mp4", ok: bool = True
) -> InferenceResult:
    status = Status.OK if ok else Status.FAILED
    return InferenceResult(f"r{frame}", status, source, frame, detections=detections if ok else [])


def test_a_moving_object_keeps_its_id_through_missed_frames() -> None:
    tracker = ObjectTracker()
    ids = []
    for f in range(60):
        dets = [] if f in (20, 21, 40) else [det(10 + 8 * f)]  # 8 px per frame; three frames missed
        out = tracker.update(dets, f)
        ids.append([d.track_id for d in out])
    seen = {i for frame_ids in ids for i in frame_ids}
    assert seen == {1}, f"one object, one id: {seen}"
    assert tracked_fraction(ids) == 1.0
    track = tracker.book.tracks[1]
    assert (track.first_frame, track.last_frame, track.hits) == (0, 59, 57)
    assert len(track.trail) == 30 and track.trail[-1] == (10 + 8 * 59 + 40, 140)


def test_two_objects_get_two_ids_and_classes_are_kept_apart() -> None:
    tracker = ObjectTracker()
    for f in range(10):
        out = tracker.update([det(10 + 5 * f), det(400 - 5 * f), det(10 + 5 * f, class_id=1)], f)
    assert len({d.track_id for d in out}) == 3
    classes = {t.track_id: t.class_id for t in tracker.book.tracks.values()}
    assert sorted(classes.values()) == [0, 0, 1]


def test_an_object_gone_for_long_gets_a_new_id_and_blips_count_as_flicker() -> None:
    tracker = ObjectTracker()
    for f in range(30):
        dets = [det(100)] if f < 10 or f >= 25 else []
        if f == 15:
            dets.append(det(500, 300))  # a one-frame false detection elsewhere
        tracker.update(dets, f)
    book = tracker.book
    assert len(book.tracks) == 3, {t.track_id: (t.first_frame, t.hits) for t in book.tracks.values()}
    flicker = book.flicker(3)
    # Ended: the first object (10 frames) and the blip (1 frame); the object back at 25 still runs.
    assert (flicker.tracks, flicker.short_tracks, flicker.short_detections) == (2, 1, 1)
    everything = book.flicker(3, ended_only=False)
    assert everything.tracks == 3 and everything.detections == 10 + 1 + 5
    assert json.dumps(everything.to_record())
    assert [t.track_id for t in book.live()] == [3]


def test_track_ids_appear_in_records_only_when_tracked() -> None:
    tracker = ObjectTracker()
    tracked = tracker.track(result(0, [det(10)]))
    assert tracked.to_record()["detections"][0]["track_id"] == 1
    plain = result(0, [det(10)]).to_record()["detections"][0]
    assert "track_id" not in plain
    failed = tracker.track(result(1, [], ok=False))
    assert failed.status is Status.FAILED
    older = tracker.track(result(0, [det(10)]))
    assert older.detections[0].track_id is None, "a frame older than the last one is not tracked"


def test_streams_in_order_releases_each_stream_in_order_and_flush_releases_the_rest() -> None:
    out: list[tuple[str | None, int | None]] = []
    order = StreamsInOrder(lambda r: out.append((r.source, r.frame)))
    for source, frame in [("v1", 1), ("v2", 0), ("img", None), ("v1", 0), ("v1", 3), ("v2", 1)]:
        order.add(result(frame, [], source=source))
    assert out == [("v2", 0), ("img", None), ("v1", 0), ("v1", 1), ("v2", 1)]
    order.flush()  # frame 2 of v1 never came (e.g. cancelled)
    assert out[-1] == ("v1", 3)


def test_stream_trackers_keep_one_tracker_per_source_across_threads() -> None:
    trackers = StreamTrackers()
    order = StreamsInOrder(lambda r: None)
    out: list[InferenceResult] = []
    lock = threading.Lock()

    def collect(r: InferenceResult) -> None:
        with lock:
            out.append(trackers.track(r))

    order = StreamsInOrder(collect)
    threads = [
        threading.Thread(
            target=lambda s=s: [order.add(result(f, [det(10 + 4 * f)], source=s)) for f in range(20)]
        )
        for s in ("a.mp4", "b.mp4")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(trackers.trackers) == {"a.mp4", "b.mp4"}
    assert {d.track_id for r in out for d in r.detections} == {1}, "each video's face is track 1 of its own"
