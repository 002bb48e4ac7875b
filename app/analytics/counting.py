"""Per line and per zone, the state of every track and what it adds up to.

Both are fed one frame at a time, in frame order, with the anchors of the tracked objects
seen on it (a track not seen on a frame says nothing about that frame). Both confirm a change
only once it has held for `confirm_frames` consecutive sightings of the track, so a box that
jitters across a line or a zone's edge does not count (supervision's LineZone calls this its
minimum_crossing_threshold); the event then carries the frame the change began on.

- `LineCounter`: `in`/`out` crossings, per class label. A crossing counts only when the
  anchor's move between its last sighting on the old side and its first on the new one passes
  through the segment itself (ends included): going round an end of the line changes side
  without counting. A sighting exactly on the line (cross = 0) belongs to no side: the track
  keeps the side it had.
- `ZoneCounter`: entries and exits, occupancy now and at most, time in the zone per track.
  A visit lasts from the first frame seen inside to the end of the last frame seen inside (that
  frame's time plus one frame period), however it ends: seen outside, lost by the tracker, or
  the stream ending. A track that comes back starts a new visit; its visits add up.
Not thread-safe: one stream, one thread (see StreamAnalytics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.analytics.events import AnalyticsEvent, Direction, EventKind, LeaveReason
from app.analytics.geometry import Point, Polygon, crosses_segment, sides
from app.analytics.zones_file import LineSpec, ZoneSpec


@dataclass(slots=True)
class TrackInfo:
    """What every counter needs to know of a track (one object per track, shared)."""

    track_id: int
    class_id: int
    label: str
    last_frame: int = -1
    last_time: float = 0.0


@dataclass(slots=True)
class _LineState:
    side: int  # +1 / -1: the side confirmed last
    last: Point  # where it was last seen on that side
    pending: int = 0  # consecutive sightings on the other side, not yet confirmed
    pending_frame: int = 0  # the first of them
    pending_time: float = 0.0
    pending_from: Point = (0.0, 0.0)  # the last point on the old side before them
    pending_point: Point = (0.0, 0.0)  # the first point on the other side


@dataclass
class LineCounts:
    crossed_in: int = 0
    crossed_out: int = 0
    by_class: dict[str, list[int]] = field(default_factory=dict)  # label -> [in, out]

    def to_record(self) -> dict[str, Any]:
        return {
            "in": self.crossed_in,
            "out": self.crossed_out,
            "by_class": {label: {"in": n[0], "out": n[1]} for label, n in sorted(self.by_class.items())},
        }


class LineCounter:
    def __init__(self, spec: LineSpec, confirm_frames: int = 2, source: str | None = None) -> None:
        self.spec = spec
        self.confirm_frames = max(1, confirm_frames)
        self.source = source
        self.counts = LineCounts()
        self._tracks: dict[int, _LineState] = {}

    def observe(
        self, tracks: Sequence[TrackInfo], points: np.ndarray, frame: int, time_s: float
    ) -> list[AnalyticsEvent]:
        events: list[AnalyticsEvent] = []
        signs = sides(self.spec.a, self.spec.b, points).tolist()
        for track, s, (x, y) in zip(tracks, signs, points.tolist(), strict=True):
            if s == 0:
                continue  # on the line: no side, nothing changes
            state = self._tracks.get(track.track_id)
            if state is None:
                self._tracks[track.track_id] = _LineState(s, (x, y))
            elif s == state.side:
                state.last = (x, y)
                state.pending = 0  # back on its side before confirming: jitter
            else:
                if state.pending == 0:
                    state.pending_frame, state.pending_time = frame, time_s
                    state.pending_from, state.pending_point = state.last, (x, y)
                state.pending += 1
                if state.pending >= self.confirm_frames:
                    event = self._crossed(track, state)
                    if event is not None:
                        events.append(event)
                    state.side, state.last, state.pending = s, (x, y), 0
        return events

    def _crossed(self, track: TrackInfo, state: _LineState) -> AnalyticsEvent | None:
        if not crosses_segment(self.spec.a, self.spec.b, state.pending_from, state.pending_point):
            return None  # round an end of the line
        direction = Direction.IN if state.side > 0 else Direction.OUT
        per_class = self.counts.by_class.setdefault(track.label, [0, 0])
        if direction is Direction.IN:
            self.counts.crossed_in += 1
            per_class[0] += 1
        else:
            self.counts.crossed_out += 1
            per_class[1] += 1
        return AnalyticsEvent(
            EventKind.LINE_CROSSED,
            self.spec.name,
            track.track_id,
            track.class_id,
            track.label,
            state.pending_frame,
            state.pending_time,
            direction=direction,
            source=self.source,
        )

    def forget(self, track_id: int) -> None:
        """The track is gone: its side is no longer known (a track seen again starts afresh)."""
        self._tracks.pop(track_id, None)


@dataclass(slots=True)
class _ZoneState:
    inside: bool = False  # confirmed
    pending: int = 0  # consecutive sightings on the other side (in or out), not yet confirmed
    pending_frame: int = 0
    pending_time: float = 0.0
    entered_frame: int = 0
    entered_time: float = 0.0
    last_inside_frame: int = 0
    last_inside_time: float = 0.0


@dataclass
class ZoneCounts:
    occupancy: int = 0  # tracks inside now
    max_occupancy: int = 0
    entries: int = 0
    dwell_s_by_track: dict[int, float] = field(default_factory=dict)  # visits ended, added up

    @property
    def total_dwell_s(self) -> float:
        return sum(self.dwell_s_by_track.values())

    def to_record(self) -> dict[str, Any]:
        return {
            "max_occupancy": self.max_occupancy,
            "entries": self.entries,
            "total_dwell_s": round(self.total_dwell_s, 3),
            "dwell_s_by_track": {str(t): round(s, 3) for t, s in sorted(self.dwell_s_by_track.items())},
        }


class ZoneCounter:
    def __init__(self, spec: ZoneSpec, confirm_frames: int = 2, source: str | None = None) -> None:
        self.spec = spec
        self.polygon = Polygon(spec.polygon)
        self.confirm_frames = max(1, confirm_frames)
        self.source = source
        self.counts = ZoneCounts()
        self._tracks: dict[int, _ZoneState] = {}

    def observe(
        self, tracks: Sequence[TrackInfo], points: np.ndarray, frame: int, time_s: float, period_s: float
    ) -> list[AnalyticsEvent]:
        events: list[AnalyticsEvent] = []
        inside = self.polygon.contains(points).tolist()
        for track, now_inside in zip(tracks, inside, strict=True):
            state = self._tracks.get(track.track_id)
            if state is None:
                if not now_inside:
                    continue  # outside and never inside: nothing to keep
                state = self._tracks[track.track_id] = _ZoneState()
            if now_inside == state.inside:
                state.pending = 0
                if now_inside:
                    state.last_inside_frame, state.last_inside_time = frame, time_s
                continue
            if state.pending == 0:
                state.pending_frame, state.pending_time = frame, time_s
            state.pending += 1
            if now_inside:
                state.last_inside_frame, state.last_inside_time = frame, time_s
            if state.pending < self.confirm_frames:
                continue
            state.pending = 0
            if now_inside:
                events.append(self._enter(track, state))
            else:
                events.append(self._leave(track, state, LeaveReason.LEFT, period_s))
        self.counts.max_occupancy = max(self.counts.max_occupancy, self.counts.occupancy)
        return events

    def _enter(self, track: TrackInfo, state: _ZoneState) -> AnalyticsEvent:
        state.inside = True
        state.entered_frame, state.entered_time = state.pending_frame, state.pending_time
        self.counts.occupancy += 1
        self.counts.entries += 1
        return AnalyticsEvent(
            EventKind.ZONE_ENTERED,
            self.spec.name,
            track.track_id,
            track.class_id,
            track.label,
            state.entered_frame,
            state.entered_time,
            source=self.source,
        )

    def _leave(
        self, track: TrackInfo, state: _ZoneState, reason: LeaveReason, period_s: float
    ) -> AnalyticsEvent:
        """End the visit at the last frame seen inside."""
        state.inside = False
        dwell = max(state.last_inside_time - state.entered_time + period_s, 0.0)
        by_track = self.counts.dwell_s_by_track
        by_track[track.track_id] = by_track.get(track.track_id, 0.0) + dwell
        self.counts.occupancy -= 1
        return AnalyticsEvent(
            EventKind.ZONE_LEFT,
            self.spec.name,
            track.track_id,
            track.class_id,
            track.label,
            state.last_inside_frame,
            state.last_inside_time,
            dwell_s=dwell,
            reason=reason,
            source=self.source,
        )

    def close(self, track: TrackInfo, reason: LeaveReason, period_s: float) -> AnalyticsEvent | None:
        """The track is gone (lost, or the stream ended): its visit, if any, ends at the last
        frame it was seen inside."""
        state = self._tracks.pop(track.track_id, None)
        if state is None or not state.inside:
            return None
        return self._leave(track, state, reason, period_s)

    def inside_now(self) -> list[int]:
        """The tracks inside now (confirmed), for drawing."""
        return [t for t, s in self._tracks.items() if s.inside]
