"""Request statistics: counters, rolling latency percentiles, throughput.

Thread-safe: `record_*` are called from gRPC / worker threads, `snapshot()` from
any thread (the GUI polls it a few times a second). One lock, O(1) updates; the
percentiles are computed on the (bounded) latency window only when a snapshot
is taken, so the per-request cost stays tiny even at 30+ fps.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass

import numpy as np

from app.inference.result import Status


@dataclass(frozen=True)
class StatsSnapshot:
    sent: int
    in_flight: int
    ok: int
    failed: int
    timed_out: int
    cancelled: int
    retried: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    throughput: float  # completed requests per second over the rolling window
    elapsed_s: float

    @property
    def completed(self) -> int:
        return self.ok + self.failed + self.timed_out + self.cancelled


class RequestStats:
    """Counters plus a rolling window of (finish time, latency) for percentiles/throughput."""

    def __init__(self, window_s: float = 10.0, max_samples: int = 4096) -> None:
        self._lock = threading.Lock()
        self._window_s = window_s
        self._samples: collections.deque[tuple[float, float]] = collections.deque(maxlen=max_samples)
        self._finishes: collections.deque[float] = collections.deque(maxlen=max_samples)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._sent = self._in_flight = 0
            self._ok = self._failed = self._timed_out = self._cancelled = self._retried = 0
            self._samples.clear()
            self._finishes.clear()
            self._started = time.monotonic()

    def record_sent(self) -> None:
        with self._lock:
            self._sent += 1
            self._in_flight += 1

    def record_retry(self) -> None:
        with self._lock:
            self._retried += 1

    def record_done(self, status: Status, latency_ms: float | None) -> None:
        now = time.monotonic()
        with self._lock:
            self._in_flight -= 1
            if status is Status.OK:
                self._ok += 1
                if latency_ms is not None:
                    self._samples.append((now, latency_ms))
            elif status is Status.TIMEOUT:
                self._timed_out += 1
            elif status is Status.CANCELLED:
                self._cancelled += 1
            else:
                self._failed += 1
            self._finishes.append(now)

    def snapshot(self) -> StatsSnapshot:
        now = time.monotonic()
        with self._lock:
            horizon = now - self._window_s
            lat = [ms for t, ms in self._samples if t >= horizon]
            recent = sum(1 for t in self._finishes if t >= horizon)
            elapsed = now - self._started
            span = min(self._window_s, elapsed) or 1e-9
            counts = (
                self._sent,
                self._in_flight,
                self._ok,
                self._failed,
                self._timed_out,
                self._cancelled,
                self._retried,
            )
        p50 = p95 = p99 = None
        if lat:
            p50, p95, p99 = (float(v) for v in np.percentile(np.asarray(lat), [50, 95, 99]))
        return StatsSnapshot(
            *counts, p50_ms=p50, p95_ms=p95, p99_ms=p99, throughput=recent / span, elapsed_s=elapsed
        )
