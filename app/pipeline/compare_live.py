"""A/B compare on a live stream: every frame offered to two sessions, shown once both answer.

- `CompareLiveRun`: one capture thread offering each frame to two `LiveJob`s, one per
  session, each with its own in-flight window: a frame B has no room for is dropped for B
  only (counted, and reported so its pair need not wait), never held back from A. When
  the source ends (or fails) both jobs are closed; `on_drained` follows the last result.
- `LivePairer`: the two results of a frame -> one `LivePair`, drawn when both are in, or
  once the first waited `deadline_s` (or the other side dropped the frame): marked with
  the side that is missing. GUI-thread only; Qt-free.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult
from app.pipeline.compare import Side
from app.pipeline.live import LiveEvent, LiveJob, LiveOptions, StreamStats, capture_for, decode, frame_of
from app.pipeline.matching import DEFAULT_IOU, Match, match_results
from app.sources.frame import Frame
from app.sources.grabs import FULL, Grab
from app.sources.live import Opener

DEFAULT_DEADLINE_S = 0.25  # how long a frame's first result waits for the other one


class CompareLiveRun:
    """One play of a source through two sessions. `on_result(side, result)` is called on
    session workers, `on_dropped(side, frame)` and `on_event(event, message)` on the capture
    thread: all must only hand off. `on_drained()` once after the source's end (or failure),
    when both sides' last results have been handed on: nothing more of this run will come.
    `stop()` blocks for at most about `timeout` s."""

    def __init__(
        self,
        source: int | str | Path,
        sessions: dict[Side, TritonSession],
        on_result: Callable[[Side, InferenceResult], None],
        on_dropped: Callable[[Side, Frame], None],
        on_event: Callable[[LiveEvent, str], None],
        options: LiveOptions | None = None,
        opener: Opener | None = None,
        on_drained: Callable[[], None] | None = None,
    ) -> None:
        self.options = options or LiveOptions()
        self._on_dropped = on_dropped
        self._on_event = on_event
        self._on_drained = on_drained
        self._lock = threading.Lock()  # the two sides drain on different threads
        self._ended = False
        self._drained_said = False
        self.jobs: dict[Side, LiveJob] = {
            side: LiveJob(
                session,
                functools.partial(on_result, side),
                max_in_flight=self.options.max_in_flight,
                drop_when_busy=not self.options.frame_by_frame,
                on_drained=self._side_drained,
            )
            for side, session in sessions.items()
        }
        self._stopped = False
        self.capture = capture_for(source, self._offer, self._event, self.options, opener)

    def _event(self, event: LiveEvent, message: str) -> None:
        # The capture thread, once, after its last frame was offered to both sides.
        self._on_event(event, message)
        with self._lock:
            self._ended = True
        for job in self.jobs.values():
            job.finish()

    def _side_drained(self) -> None:
        # Each group drains once; the second to drain (whichever thread) finds both drained.
        # Jobs stopped before the source ended drain too: that run says nothing.
        with self._lock:
            if self._drained_said or not self._ended:
                return
            if not all(job.group.drained for job in self.jobs.values()):
                return
            self._drained_said = True
        if self._on_drained is not None:
            self._on_drained()

    def _offer(self, grab: Grab) -> None:
        # The capture thread. In live mode neither offer blocks, so B's full window never
        # delays A's frame; frame by frame (files) each waits for its own slot in turn.
        # Decoded once for both, at full size (the compare's views), and only when a side
        # has room for it: a frame neither can take is dropped by both before any decoding.
        jobs = self.jobs.values()
        if all(job.drop_when_busy and not job.has_room() for job in jobs):
            for job in jobs:
                job.drop()  # nobody waits for it: no pair to settle
            return
        frame = decode(grab, FULL)
        if frame is None:
            return
        for side, job in self.jobs.items():
            if not job.offer(frame) and not self._stopped:
                self._on_dropped(side, frame)

    def start(self) -> None:
        self.capture.start()

    def pause(self) -> None:
        self.capture.pause()

    def resume(self) -> None:
        self.capture.resume()

    def set_max_in_flight(self, value: int) -> None:
        self.options.max_in_flight = max(1, int(value))
        for job in self.jobs.values():
            job.max_in_flight = self.options.max_in_flight

    def stream_stats(self) -> dict[Side, StreamStats]:
        return {side: job.stats() for side, job in self.jobs.items()}

    def in_flight(self) -> int:
        return sum(job.group.in_flight for job in self.jobs.values())

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop both jobs (wakes an offer waiting for a slot), then the capture."""
        self._stopped = True
        for job in self.jobs.values():
            job.stop()
        return self.capture.stop(timeout)


@dataclass
class LivePair:
    """One frame with what each model found on it; `missing` names the side drawn without
    its result (late past the deadline, or the frame was dropped for it)."""

    frame: Frame
    a: InferenceResult | None
    b: InferenceResult | None
    match: Match | None
    missing: Side | None = None

    @property
    def index(self) -> int:
        return self.frame.index

    def result(self, side: Side) -> InferenceResult | None:
        return self.a if side is Side.A else self.b


@dataclass
class _Waiting:
    frame: Frame
    since: float
    results: dict[Side, InferenceResult]
    dropped: set[Side]


class LivePairer:
    """Pairs a live stream's results per frame (GUI thread only)."""

    def __init__(self, deadline_s: float = DEFAULT_DEADLINE_S, iou_threshold: float = DEFAULT_IOU) -> None:
        self.deadline_s = deadline_s
        self.iou_threshold = iou_threshold
        self._waiting: dict[int, _Waiting] = {}
        self.complete = 0  # pairs with both results
        self.late = 0  # pairs handed on with one side missing

    def _entry(self, frame: Frame, now: float) -> _Waiting:
        entry = self._waiting.get(frame.index)
        if entry is None:
            entry = self._waiting[frame.index] = _Waiting(frame, now, {}, set())
        return entry

    def result(self, side: Side, result: InferenceResult, now: float) -> LivePair | None:
        """A result came in: its pair when the frame is now complete (or the other side
        dropped it), else None (it waits)."""
        frame = frame_of(result)
        entry = self._entry(frame, now)
        entry.results[side] = result
        return self._settled(frame.index)

    def dropped(self, side: Side, frame: Frame, now: float) -> LivePair | None:
        """`side` will never answer for `frame`: the other side's result need not wait."""
        entry = self._entry(frame, now)
        entry.dropped.add(side)
        return self._settled(frame.index)

    def _settled(self, index: int) -> LivePair | None:
        entry = self._waiting[index]
        if len(entry.results) + len(entry.dropped) < 2:
            return None
        del self._waiting[index]
        if not entry.results:
            return None  # both dropped it: nothing to show
        return self._pair(entry)

    def expire(self, now: float) -> list[LivePair]:
        """Pairs whose first result waited past the deadline, oldest first, marked."""
        due = sorted(i for i, e in self._waiting.items() if e.results and now - e.since >= self.deadline_s)
        return [self._pair(self._waiting.pop(i)) for i in due]

    def flush(self) -> list[LivePair]:
        """Every pair still waiting for a side that will never answer (the run is over),
        oldest first, marked."""
        return self.expire(math.inf)

    def forget_before(self, index: int) -> None:
        """Frames older than one already drawn will never be drawn: let them go (and their images)."""
        for i in [i for i in self._waiting if i < index]:
            del self._waiting[i]

    def clear(self) -> None:
        self._waiting.clear()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _pair(self, entry: _Waiting) -> LivePair:
        a, b = entry.results.get(Side.A), entry.results.get(Side.B)
        match = match_results(a, b, self.iou_threshold) if a is not None and b is not None else None
        missing = Side.A if a is None else Side.B if b is None else None
        if missing is None:
            self.complete += 1
        else:
            self.late += 1
        return LivePair(entry.frame, a, b, match, missing)
