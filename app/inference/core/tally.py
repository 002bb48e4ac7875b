"""The one statistics kit: how inputs ended (`StatusCounts`) and latency percentiles
(`LatencyWindow`, `percentiles`). Request statistics, request groups, the viewer's scopes,
display figures, the compare tally and the load levels all count and rank with these, so
a figure means the same everywhere and percentiles are computed in one place.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.inference.result import Status

_FIELD = {
    Status.OK: "ok",
    Status.FAILED: "failed",
    Status.TIMEOUT: "timeout",
    Status.CANCELLED: "cancelled",
    Status.SKIPPED: "skipped",
}


@dataclass(frozen=True)
class StatusCounts:
    """How many inputs ended each way, how many became requests, how many never started.

    A value: `add*` return a new one, so a snapshot can be handed to any thread as it is.
    """

    sent: int = 0  # inputs that became requests
    ok: int = 0
    failed: int = 0
    timeout: int = 0
    cancelled: int = 0
    skipped: int = 0  # not media (never a request)
    not_started: int = 0  # inputs never sent (their job was cancelled first)

    def add(self, status: Status, n: int = 1) -> StatusCounts:
        name = _FIELD[status]
        return dataclasses.replace(self, **{name: getattr(self, name) + n})

    def add_sent(self, n: int = 1) -> StatusCounts:
        return dataclasses.replace(self, sent=self.sent + n)

    def add_not_started(self, n: int) -> StatusCounts:
        return dataclasses.replace(self, not_started=self.not_started + n)

    def of(self, status: Status) -> int:
        return int(getattr(self, _FIELD[status]))

    @property
    def ended(self) -> int:
        """Inputs with a result, whatever it was."""
        return self.ok + self.failed + self.timeout + self.cancelled + self.skipped

    @property
    def unsuccessful(self) -> int:
        """Inputs that did not succeed and were not skipped."""
        return self.failed + self.timeout + self.cancelled


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
