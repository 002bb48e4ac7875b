"""The one statistics kit: how inputs ended (`StatusCounts`) and latency percentiles
(`LatencyWindow`, `percentiles`). Request statistics, request groups, the viewer's scopes,
display figures, the compare tally and the load levels all count and rank with these, so
a figure means the same everywhere and percentiles are computed in one place.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from app.inference.result import Status


class StatusCounts(NamedTuple):
    """How many inputs ended each way, how many became requests, how many never started.

    A value (a named tuple: cheap to make, several per request): `add*` return a new one,
    so a snapshot can be handed to any thread as it is.
    """

    sent: int = 0  # inputs that became requests
    ok: int = 0
    failed: int = 0
    timeout: int = 0
    cancelled: int = 0
    skipped: int = 0  # not media (never a request)
    not_started: int = 0  # inputs never sent (their job was cancelled first)

    def add(self, status: Status, n: int = 1) -> StatusCounts:
        return self._plus(_INDEX[status], n)

    def add_sent(self, n: int = 1) -> StatusCounts:
        return self._plus(0, n)

    def add_not_started(self, n: int) -> StatusCounts:
        return self._plus(6, n)

    def _plus(self, index: int, n: int) -> StatusCounts:
        values = list(self)
        values[index] += n
        return StatusCounts._make(values)

    def of(self, status: Status) -> int:
        return self[_INDEX[status]]

    @property
    def ended(self) -> int:
        """Inputs with a result, whatever it was."""
        return self.ok + self.failed + self.timeout + self.cancelled + self.skipped

    @property
    def unsuccessful(self) -> int:
        """Inputs that did not succeed and were not skipped."""
        return self.failed + self.timeout + self.cancelled


_INDEX = {
    Status.OK: StatusCounts._fields.index("ok"),
    Status.FAILED: StatusCounts._fields.index("failed"),
    Status.TIMEOUT: StatusCounts._fields.index("timeout"),
    Status.CANCELLED: StatusCounts._fields.index("cancelled"),
    Status.SKIPPED: StatusCounts._fields.index("skipped"),
}


def percentiles(values: Iterable[float], qs: Sequence[float]) -> tuple[float | None, ...]:
    """numpy's percentiles (linear interpolation) of `values` at each of `qs` (0-100); all
    None when there is no value."""
    data = np.fromiter(values, np.float64)
    if not data.size:
        return (None,) * len(qs)
    return tuple(float(v) for v in np.percentile(data, list(qs)))


class LatencyWindow:
    """The latest latencies in ms: the last `size` (None: every one), and with `horizon_s`
    only those added within that many seconds. Percentiles are computed when asked, so
    `add` stays O(1). Thread-safe (results arrive on worker threads, figures are read
    elsewhere)."""

    def __init__(
        self,
        size: int | None = None,
        horizon_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = size
        self.horizon_s = horizon_s
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: collections.deque[tuple[float, float]] = collections.deque(maxlen=size)

    def add(self, latency_ms: float, now: float | None = None) -> None:
        at = (self._clock() if now is None else now) if self.horizon_s is not None else 0.0
        with self._lock:
            self._samples.append((at, latency_ms))

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()

    def values(self, now: float | None = None) -> list[float]:
        with self._lock:
            samples = list(self._samples)
        if self.horizon_s is None:
            return [ms for _, ms in samples]
        horizon = (self._clock() if now is None else now) - self.horizon_s
        return [ms for at, ms in samples if at >= horizon]

    def __len__(self) -> int:
        return len(self.values())

    def percentiles(self, *qs: float, now: float | None = None) -> tuple[float | None, ...]:
        return percentiles(self.values(now), qs)
