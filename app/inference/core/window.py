"""A limit on requests in flight that waiting threads can be woken from (close, cancel)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Window:
    """Up to `size` slots. Unlike a semaphore, a wait ends early when the window is closed
    or the caller's `abort()` turns true (after `wake()`): a stop never leaves a thread
    blocked here."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a window needs at least one slot")
        self._cond = threading.Condition()
        self._size = size
        self._used = 0
        self._waiting = 0
        self._closed = False

    @property
    def size(self) -> int:
        return self._size

    @size.setter
    def size(self, value: int) -> None:
        with self._cond:
            self._size = max(1, int(value))
            self._cond.notify_all()

    @property
    def used(self) -> int:
        return self._used

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def waiting(self) -> int:
        """Threads waiting in `acquire()` for a slot now."""
        return self._waiting

    def acquire(self, timeout: float | None = None, abort: Callable[[], bool] | None = None) -> bool:
        """Take a slot: wait up to `timeout` s (None: as long as needed, 0: not at all).
        False when none came in time, the window closed, or `abort()` is true."""

        def stop() -> bool:
            return self._closed or (abort is not None and abort())

        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: stop() or self._used < self._size, timeout)
            finally:
                self._waiting -= 1
            if stop() or self._used >= self._size:
                return False
            self._used += 1
            return True

    def release(self) -> None:
        with self._cond:
            self._used -= 1
            # All: a woken waiter whose abort() is true leaves without taking the slot.
            self._cond.notify_all()

    def wake(self) -> None:
        """Make waiters re-check their `abort()`."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        """No more slots for anyone; every waiter returns False now."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
