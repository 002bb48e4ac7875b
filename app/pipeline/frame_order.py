"""Results of a stream back in frame order, for the recording (nothing lost to reordering).

Requests run in parallel, so frame 11's result may come before frame 10's, and a slow request
can be overtaken by many. A result waits here until nothing older can still come:
- frame by frame, every frame is sent: the next one written is the next index (a failed
  frame is a gap that counts, since every sent frame ends exactly once);
- live (frames dropped when busy), the caller says when the stream is quiet (nothing in
  flight, every result received): then everything waiting is safe;
- never more than `max_waiting` results wait (memory, and a recording that keeps up): past
  that the oldest goes, and a straggler older than what was written is left out.
Plain Python, GUI thread.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

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
