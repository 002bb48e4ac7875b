"""Results of a stream back in frame order, for the recording (nothing lost to reordering).

Requests run in parallel, so frame 11's result may come before frame 10's, and a slow request
can be overtaken by many. A result waits here until nothing older can still come:
- frame by frame, every frame is sent: the next one written is the next index (a failed
  frame is a gap that counts, since every sent frame ends exactly once);
- live (frames dropped when busy), the caller says when the stream is quiet (nothing in
  flight, every result received): then everything waiting is safe;
- never more than `max_waiting` results wait (memory, and a recording that keeps up): past
  that the oldest goes, and a straggler older than what was written is left out.
Plain Python, GUI thread. `StreamsInOrder` does the same for several streams at once, frame
by frame and unbounded (the command line: every frame is sent, none may be dropped), from
any thread.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from app.inference.result import InferenceResult

T = TypeVar("T")
MAX_WAITING = 16  # about half a second of 30 fps video


class FrameOrder(Generic[T]):
    def __init__(self, first: int | None, consecutive: bool, max_waiting: int = MAX_WAITING) -> None:
        """first: the first frame to record (None: the first result that comes);
        consecutive: every frame from `first` on was sent (frame by frame)."""
        self.consecutive = consecutive
        self.max_waiting = max(1, max_waiting)
        self._next = first  # the oldest index that may still be written
        self._heap: list[tuple[int, int, T | None]] = []
        self._tie = itertools.count()  # never compare payloads

    def push(self, index: int, item: T | None, quiet: bool = False) -> list[T]:
        """A result for frame `index` (item None: a frame that will not be recorded, e.g. it
        failed). Returns the items now safe to write, oldest first."""
        if self._next is None:
            self._next = index
        if index < self._next:
            return []  # older than what was written (or than the recording's start)
        heapq.heappush(self._heap, (index, next(self._tie), item))
        out: list[T] = []
        while self._heap and (
            quiet
            or len(self._heap) > self.max_waiting
            or (self.consecutive and self._heap[0][0] <= self._next)
        ):
            ready_index, _tie, ready = heapq.heappop(self._heap)
            self._next = ready_index + 1
            if ready is not None:
                out.append(ready)
        return out

    def drain(self) -> list[T]:
        """Everything still waiting, oldest first (the stream stopped: nothing older can come)."""
        out = [item for _i, _t, item in sorted(self._heap) if item is not None]
        self._heap.clear()
        return out

    def __len__(self) -> int:
        return len(self._heap)


class StreamsInOrder:
    """Passes results on in frame order per stream (source), starting at frame 0; results
    without a frame (images, local failures) pass at once. Thread-safe: results come from
    several threads and are handed on under one lock, so a stream's results are never handed
    on out of order."""

    def __init__(self, on_result: Callable[[InferenceResult], None]) -> None:
        self._on_result = on_result
        self._lock = threading.Lock()
        self._streams: dict[str, FrameOrder[InferenceResult]] = {}

    def add(self, result: InferenceResult) -> None:
        with self._lock:
            if result.frame is None or result.source is None:
                self._on_result(result)
                return
            order = self._streams.get(result.source)
            if order is None:
                order = self._streams[result.source] = FrameOrder(
                    0, consecutive=True, max_waiting=sys.maxsize
                )
            for ready in order.push(result.frame, result):
                self._on_result(ready)

    def flush(self) -> None:
        """Hand on what still waits behind a frame that never came (cancelled, not started),
        in frame order."""
        with self._lock:
            for order in self._streams.values():
                for ready in order.drain():
                    self._on_result(ready)
