"""A tiny timer thread: run callables after a delay (retry back-off) without tying up workers."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class DelayedCalls:
    def __init__(self, name: str = "triton-retry") -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay_s: float, fn: Callable[[], None]) -> bool:
        with self._cond:
            if self._stopped:
                return False
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._counter), fn))
            self._cond.notify()
            return True

    def stop(self) -> list[Callable[[], None]]:
        """Stop the thread; returns the calls that never ran (the caller ends them)."""
        with self._cond:
            self._stopped = True
            pending = [fn for _, _, fn in self._heap]
            self._heap.clear()
            self._cond.notify()
        self._thread.join(timeout=2.0)
        return pending

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._heap)
            fn()
