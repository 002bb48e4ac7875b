"""Persistent track ids across the frames of one stream, and what they say about stability.

- `ObjectTracker`: frames' detections in frame order in, the same detections with a
  `track_id` out. The association (Kalman-predicted boxes matched by IoU, per class, ids
  kept through a few missed frames) is Norfair's (pyproject.toml says why that library);
  this adapter maps its objects back to our detections and keeps the book.
- `TrackBook`: per track its class, first/last frame, length and a short trail of box
  centres (for drawing); `flicker()`: tracks that lived fewer than N frames.
A tracker must see a stream's frames in order: `app.pipeline.frame_order.StreamsInOrder`
puts them back in order (requests in flight finish in any order).
No Qt: the command line (`infer --track`) and the viewer's live preview use the same code.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.inference.result import Detection, InferenceResult

MAX_MISSED = 6  # frames a track survives without a detection (a missed frame or two, and more)
MIN_IOU = 0.3  # a detection continues a track when it overlaps the track's prediction at least this much
TRAIL_LENGTH = 30  # centres kept per track for its trail (1 s at 30 fps)
FLICKER_FRAMES = 3  # a track seen on fewer frames than this "flickers"


@dataclass
class Track:
    """One object's life in a stream."""

    track_id: int
    class_id: int
    label: str
    first_frame: int
    last_frame: int
    hits: int = 0  # frames it was detected on
    trail: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=TRAIL_LENGTH))

    @property
    def span(self) -> int:
        """Frames from first to last seen, both included."""
        return self.last_frame - self.first_frame + 1


@dataclass(frozen=True)
class FlickerStats:
    tracks: int  # tracks that ended (or all of them, at the end of a stream)
    short_tracks: int  # of those, seen on fewer than `frames` frames
    short_detections: int  # detections that belonged to short tracks
    detections: int  # detections of those tracks
    frames: int  # the N of "fewer than N frames"

    @property
    def short_fraction(self) -> float:
        return self.short_tracks / self.tracks if self.tracks else 0.0

    def to_record(self) -> dict[str, Any]:
        return {
            "tracks": self.tracks,
            "short_tracks": self.short_tracks,
            "short_detections": self.short_detections,
            "detections": self.detections,
            "fewer_than_frames": self.frames,
        }


class TrackBook:
    """What is known of every track of a stream (not thread-safe: one stream, one thread)."""

    def __init__(self) -> None:
        self.tracks: dict[int, Track] = {}
        self.last_frame = -1

    def see(self, detection: Detection, frame: int) -> None:
        assert detection.track_id is not None
        track = self.tracks.get(detection.track_id)
        if track is None:
            track = Track(detection.track_id, detection.class_id, detection.label, frame, frame)
            self.tracks[detection.track_id] = track
        track.last_frame = frame
        track.hits += 1
        x1, y1, x2, y2 = detection.box
        track.trail.append(((x1 + x2) / 2, (y1 + y2) / 2))

    def live(self, max_missed: int = MAX_MISSED) -> list[Track]:
        """Tracks seen within the last `max_missed` frames (those still followed)."""
        return [t for t in self.tracks.values() if self.last_frame - t.last_frame <= max_missed]

    def flicker(self, frames: int = FLICKER_FRAMES, *, ended_only: bool = True) -> FlickerStats:
        """Tracks detected on fewer than `frames` frames, among those that ended (a track still
        followed may yet grow), or among all (`ended_only=False`, at the end of a stream)."""
        done = [
            t for t in self.tracks.values() if not ended_only or self.last_frame - t.last_frame > MAX_MISSED
        ]
        short = [t for t in done if t.hits < frames]
        return FlickerStats(
            len(done), len(short), sum(t.hits for t in short), sum(t.hits for t in done), frames
        )


def load_tracker_library() -> None:
    """Import Norfair (and SciPy: ~1.7 s the first time) now. The viewer calls it on a worker
    thread when tracking is switched on, so its GUI thread never waits for the import when it
    makes the first `ObjectTracker`."""
    import norfair  # noqa: F401


class ObjectTracker:
    """Track ids for one stream. `update()` must get the stream's frames in increasing order;
    frames never given (dropped, failed) count as frames without detections."""

    def __init__(self, max_missed: int = MAX_MISSED, min_iou: float = MIN_IOU) -> None:
        # Imported here: only streams that are tracked pay for Norfair (and SciPy) at start-up.
        from norfair import Detection as NorfairDetection
        from norfair import Tracker

        self._detection_type = NorfairDetection
        # hit_counter_max: a track lives that many frames without a detection once it has
        # been seen that often; initialization_delay 0: a new object gets its id at once, so
        # short-lived detections show up as short tracks (the flicker statistics).
        self._tracker = Tracker(
            distance_function="iou",
            distance_threshold=1.0 - min_iou,
            hit_counter_max=max_missed,
            initialization_delay=0,
        )
        self.book = TrackBook()
        self._last: int | None = None

    def update(self, detections: Sequence[Detection], frame: int) -> list[Detection]:
        """The detections of `frame` with their track ids (a frame older than the last one
        given is returned unchanged: tracks never go back in time)."""
        if self._last is not None and frame <= self._last:
            return list(detections)
        period = 1 if self._last is None else frame - self._last
        self._last = frame
        self.book.last_frame = frame
        candidates = [
            self._detection_type(
                np.array([[d.box[0], d.box[1]], [d.box[2], d.box[3]]], np.float64),
                label=d.class_id,
                data=i,
            )
            for i, d in enumerate(detections)
            if d.box[2] > d.box[0] and d.box[3] > d.box[1]  # a degenerate box has no IoU to follow
        ]
        ids: dict[int, int] = {}
        current = {id(c) for c in candidates}
        for obj in self._tracker.update(candidates, period=period):
            last = obj.last_detection
            if obj.id is not None and last is not None and id(last) in current:
                ids[int(last.data)] = int(obj.id)
        out = []
        for i, d in enumerate(detections):
            tracked = dataclasses.replace(d, track_id=ids[i]) if i in ids else d
            if tracked.track_id is not None:
                self.book.see(tracked, frame)
            out.append(tracked)
        return out

    def track(self, result: InferenceResult) -> InferenceResult:
        """`result` with track ids on its detections (results that are not ok pass as they are,
        and count as a frame without detections)."""
        if result.frame is None:
            return result
        detections = self.update(result.detections if result.ok else [], result.frame)
        return dataclasses.replace(result, detections=detections) if result.ok else result


def tracked_fraction(ids_per_frame: Iterable[Sequence[int | None]]) -> float:
    """Of the frames with a detection, the fraction where the most frequent track id appears
    (1.0: one object followed with one id throughout)."""
    frames = [list(ids) for ids in ids_per_frame if ids]
    if not frames:
        return 0.0
    counts: dict[int, int] = {}
    for ids in frames:
        for tid in set(ids):
            if tid is not None:
                counts[tid] = counts.get(tid, 0) + 1
    return max(counts.values(), default=0) / len(frames)


class StreamTrackers:
    """One ObjectTracker per stream (source), made on its first frame (thread-safe)."""

    def __init__(self, factory: Callable[[], ObjectTracker] = ObjectTracker) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self.trackers: dict[str, ObjectTracker] = {}

    def track(self, result: InferenceResult) -> InferenceResult:
        if result.frame is None or result.source is None:
            return result
        with self._lock:
            tracker = self.trackers.get(result.source)
            if tracker is None:
                tracker = self.trackers[result.source] = self._factory()
            return tracker.track(result)
