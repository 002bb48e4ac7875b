"""Client-side batching with a timer: gather up to N prepared requests with the same tensor
shape, or wait at most T ms, then hand them on as one batch (one gRPC call).

Beside Triton's dynamic batching, not instead of it: fewer, larger messages cost less
per image on the client and on the network; the server may still merge batches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

Schedule = Callable[[float, Callable[[], None]], bool]  # (delay_s, fn) -> accepted


class ClientBatcher(Generic[T]):
    """`add(key, item)` from any thread; `flush(items)` gets each batch exactly once, on the
    adding thread when a batch fills, else from the timer when the first item has waited
    `delay_s`. Items of different keys (tensor shapes) never share a batch."""

    def __init__(
        self, size: int, delay_s: float, flush: Callable[[list[T]], None], schedule: Schedule
    ) -> None:
        if size < 1:
            raise ValueError("a batch holds at least one request")
        self.size = size
        self.delay_s = max(0.0, delay_s)
        self._flush = flush
        self._schedule = schedule
        self._lock = threading.Lock()
        self._open: dict[Hashable, list[T]] = {}
        self._closed = False

    def add(self, key: Hashable, item: T) -> None:
        full: list[T] | None = None
        first = False
        with self._lock:
            if self._closed:
                full = [item]
            else:
                batch = self._open.setdefault(key, [])
                batch.append(item)
                first = len(batch) == 1
                if len(batch) >= self.size:
                    full = self._open.pop(key)
        if full is not None:
            self._flush(full)
        elif first and not self._schedule(self.delay_s, lambda: self._expire(key, item)):
            self._expire(key, item)  # no timer (closing): send what there is now

    def _expire(self, key: Hashable, first: T) -> None:
        """The timer of the batch that began with `first`: flush it if it is still open."""
        with self._lock:
            batch = self._open.get(key)
            if not batch or batch[0] is not first:
                return  # already flushed full (a later batch may have the same key)
            del self._open[key]
        self._flush(batch)

    def close(self) -> None:
        """Flush every open batch now; later items go out alone, at once."""
        with self._lock:
            self._closed = True
            batches, self._open = list(self._open.values()), {}
        for batch in batches:
            self._flush(batch)
