"""`StreamAnalytics`: the lines and zones of one stream, fed frame by frame.

    analytics = StreamAnalytics(load_zones("zones.json"), frame_period_s=1 / fps, source=name)
    for frame, time_s, detections in ...:          # in frame order, with track ids
        for event in analytics.update(frame, time_s, detections):
            ...                                      # line_crossed, zone_entered, zone_left
        analytics.snapshot()                         # counts now, for drawing (cheap)
    analytics.finish()                               # the visits still open end here
    analytics.summary()                              # {"lines": {...}, "zones": {...}}

The command line (`infer --track --zones`) and the viewer use this one class. Detections
without a track id are left out (a crossing or a visit needs an identity); a heat map, when
given, takes every detection's anchor. A track not seen for more than `lost_after` frames is
lost (more than the tracker keeps one without a detection): its visits end at the last frame
it was seen, and a sighting of the same id later is a new track. Time comes from the caller
(a video: frame / fps; a live stream: the capture time), so one class serves both.
Not thread-safe: call it from one thread (cheap: see tests/bench/bench_analytics.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.analytics.counting import LineCounter, TrackInfo, ZoneCounter
from app.analytics.events import AnalyticsEvent, LeaveReason
from app.analytics.geometry import anchors
from app.analytics.heatmap import HeatMap
from app.analytics.zones_file import ZonesConfig
from app.inference.result import Detection

CONFIRM_FRAMES = 2  # sightings that confirm a crossing, an entry or an exit (jitter filter)
# Frames without a sighting after which a track is lost: one more than the tracker keeps a
# track alive without a detection (app.pipeline.tracking.MAX_MISSED), so the tracker has
# given it up by then (a sighting of its id later would be a new track to the tracker too).
LOST_AFTER = 7


@dataclass(frozen=True)
class AnalyticsSnapshot:
    """The counts at one moment (copies: safe to hand to another thread)."""

    frame: int
    lines: dict[str, tuple[int, int]]  # name -> (in, out)
    zones: dict[str, tuple[int, int]]  # name -> (occupancy now, max occupancy)
    inside: dict[str, tuple[int, ...]]  # zone name -> the tracks inside now


class StreamAnalytics:
    def __init__(
        self,
        config: ZonesConfig,
        *,
        frame_period_s: float | None = None,
        source: str | None = None,
        confirm_frames: int = CONFIRM_FRAMES,
        lost_after: int = LOST_AFTER,
        heatmap: HeatMap | None = None,
    ) -> None:
        """`frame_period_s`: the time one frame stands for (a video: 1 / fps); None: measured
        from the times given (a live stream's capture times)."""
        self.config = config
        self.source = source
        self.lost_after = max(1, lost_after)
        self.heatmap = heatmap
        self.lines = [LineCounter(spec, confirm_frames, source) for spec in config.lines]
        self.zones = [ZoneCounter(spec, confirm_frames, source) for spec in config.zones]
        self._tracks: dict[int, TrackInfo] = {}
        self._period = frame_period_s
        self._first: tuple[int, float] | None = None  # (frame, time) of the first frame
        self._last: tuple[int, float] | None = None
        self.finished = False

    @property
    def frame_period_s(self) -> float:
        """The period given, or the mean measured so far (0 before two frames)."""
        if self._period is not None:
            return self._period
        if self._first is None or self._last is None or self._last[0] == self._first[0]:
            return 0.0
        return (self._last[1] - self._first[1]) / (self._last[0] - self._first[0])

    def update(self, frame: int, time_s: float, detections: Sequence[Detection]) -> list[AnalyticsEvent]:
        """One frame's detections (frames in increasing order; an older one is ignored, as the
        tracker ignores it). Returns the events this frame decided, in the order they happened."""
        if self.finished or (self._last is not None and frame <= self._last[0]):
            return []
        previous = self._last
        if self._first is None:
            self._first = (frame, time_s)
        self._last = (frame, time_s)
        if self.heatmap is not None:  # every frame: time moves its window even without sightings
            boxes = np.array([d.box for d in detections], np.float64).reshape(-1, 4)
            self.heatmap.add(anchors(boxes), time_s, self._time_covered(previous, frame, time_s))
        tracked = [d for d in detections if d.track_id is not None]
        events = self._expire(frame)
        if tracked:
            tracks = [self._track(d, frame, time_s) for d in tracked]
            points = anchors(np.array([d.box for d in tracked], np.float64))
            period = self.frame_period_s
            for line in self.lines:
                events += line.observe(tracks, points, frame, time_s)
            for zone in self.zones:
                events += zone.observe(tracks, points, frame, time_s, period)
        events.sort(key=lambda e: e.frame)  # stable: a frame's events keep their order
        return events

    def _time_covered(self, previous: tuple[int, float] | None, frame: int, time_s: float) -> float:
        """The time this frame's sightings stand for in the heat map: the frames since the one
        before (a frame dropped by a live stream is covered by the next one seen)."""
        if previous is None:
            return self.frame_period_s
        if self._period is not None:
            return self._period * (frame - previous[0])
        return max(time_s - previous[1], 0.0)

    def _track(self, detection: Detection, frame: int, time_s: float) -> TrackInfo:
        assert detection.track_id is not None
        track = self._tracks.get(detection.track_id)
        if track is None:
            track = self._tracks[detection.track_id] = TrackInfo(
                detection.track_id, detection.class_id, detection.label
            )
        track.last_frame, track.last_time = frame, time_s
        return track

    def _expire(self, frame: int) -> list[AnalyticsEvent]:
        gone = [t for t in self._tracks.values() if frame - t.last_frame > self.lost_after]
        return self._close(gone, LeaveReason.LOST)

    def _close(self, tracks: Sequence[TrackInfo], reason: LeaveReason) -> list[AnalyticsEvent]:
        events = []
        period = self.frame_period_s
        for track in tracks:
            for zone in self.zones:
                event = zone.close(track, reason, period)
                if event is not None:
                    events.append(event)
            for line in self.lines:
                line.forget(track.track_id)
            del self._tracks[track.track_id]
        return events

    def finish(self) -> list[AnalyticsEvent]:
        """The stream ended: every visit still open ends at its track's last frame seen
        (reason "ended"). Later updates are ignored."""
        if self.finished:
            return []
        self.finished = True
        events = self._close(list(self._tracks.values()), LeaveReason.ENDED)
        events.sort(key=lambda e: e.frame)
        return events

    def snapshot(self) -> AnalyticsSnapshot:
        return AnalyticsSnapshot(
            frame=self._last[0] if self._last is not None else -1,
            lines={c.spec.name: (c.counts.crossed_in, c.counts.crossed_out) for c in self.lines},
            zones={c.spec.name: (c.counts.occupancy, c.counts.max_occupancy) for c in self.zones},
            inside={c.spec.name: tuple(c.inside_now()) for c in self.zones},
        )

    def summary(self) -> dict[str, Any]:
        """{"lines": {NAME: {"in", "out", "by_class"}}, "zones": {NAME: {"max_occupancy",
        "entries", "total_dwell_s", "dwell_s_by_track"}}}: the visits ended so far (call
        `finish()` first for a whole stream)."""
        return {
            "lines": {c.spec.name: c.counts.to_record() for c in self.lines},
            "zones": {c.spec.name: c.counts.to_record() for c in self.zones},
        }
