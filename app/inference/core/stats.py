"""Request statistics: counters, rolling latency percentiles, throughput, client time split
(counted with the statistics kit in tally.py).

Thread-safe: `record_*` are called from gRPC / worker threads, `snapshot()` from
any thread (the GUI polls it a few times a second). O(1) updates; the percentiles
are computed on the (bounded) latency window only when a snapshot is taken, so
the per-request cost stays tiny even at 30+ fps.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass

import numpy as np

from app.inference.core.tally import LatencyWindow, StatusCounts
from app.inference.result import RequestTiming, Status


@dataclass(frozen=True)
class TimingMeans:
    """Means per successful request over the window, in milliseconds."""

    requests: int
    preprocess_ms: float
    wait_ms: float
    round_trip_ms: float
    postprocess_ms: float
    batch: float  # images per request

    def to_record(self) -> dict[str, float]:
        return {
            "client_preprocess_ms": round(self.preprocess_ms, 3),
            "client_wait_ms": round(self.wait_ms, 3),
            "round_trip_ms": round(self.round_trip_ms, 3),
            "client_postprocess_ms": round(self.postprocess_ms, 3),
        }


def mean_timing(timings: list[RequestTiming]) -> TimingMeans | None:
    if not timings:
        return None
    a = np.asarray(
        [(t.preprocess_ms, t.wait_ms, t.round_trip_ms, t.postprocess_ms, t.batch) for t in timings],
        np.float64,
    ).mean(axis=0)
    return TimingMeans(len(timings), *(float(v) for v in a))


class TimingTotals:
    """Sums of the client time split over a whole run (the CLI's summary); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0
        self._sums = np.zeros(5, np.float64)

    def add(self, timing: RequestTiming | None) -> None:
        if timing is None:
            return
        row = (
            timing.preprocess_ms,
            timing.wait_ms,
            timing.round_trip_ms,
            timing.postprocess_ms,
            timing.batch,
        )
        with self._lock:
            self._n += 1
            self._sums += row

    def means(self) -> TimingMeans | None:
        with self._lock:
            if not self._n:
                return None
            return TimingMeans(self._n, *(float(v) for v in self._sums / self._n))


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
    timing: TimingMeans | None = None  # client time split over the rolling window

    @property
    def completed(self) -> int:
        return self.ok + self.failed + self.timed_out + self.cancelled


class RequestStats:
    """Counters (`StatusCounts`) plus rolling windows of latencies (`LatencyWindow`), client
    time splits and finish times, for percentiles, the time split and throughput."""

    def __init__(self, window_s: float = 10.0, max_samples: int = 4096) -> None:
        self._lock = threading.Lock()
        self._window_s = window_s
        self._latencies = LatencyWindow(max_samples, horizon_s=window_s)
        self._timings: collections.deque[tuple[float, RequestTiming]] = collections.deque(maxlen=max_samples)
        self._finishes: collections.deque[float] = collections.deque(maxlen=max_samples)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._counts = StatusCounts()
            self._retried = 0
            self._latencies.clear()
            self._timings.clear()
            self._finishes.clear()
            self._started = time.monotonic()

    def record_sent(self) -> None:
        with self._lock:
            self._counts = self._counts.add_sent()

    def record_retry(self) -> None:
        with self._lock:
            self._retried += 1

    def record_done(
        self, status: Status, latency_ms: float | None, timing: RequestTiming | None = None
    ) -> None:
        now = time.monotonic()
        with self._lock:
            self._counts = self._counts.add(status)
            if status is Status.OK and latency_ms is not None:
                self._latencies.add(latency_ms, now)
                if timing is not None:
                    self._timings.append((now, timing))
            self._finishes.append(now)

    def snapshot(self) -> StatsSnapshot:
        now = time.monotonic()
        horizon = now - self._window_s
        with self._lock:
            c, retried = self._counts, self._retried
            timings = [t for at, t in self._timings if at >= horizon]
            recent = sum(1 for t in self._finishes if t >= horizon)
            elapsed = now - self._started
        span = min(self._window_s, elapsed) or 1e-9
        p50, p95, p99 = self._latencies.percentiles(50, 95, 99, now=now)
        return StatsSnapshot(
            sent=c.sent,
            in_flight=c.sent - c.ended,  # every request ends once
            ok=c.ok,
            failed=c.failed + c.skipped,
            timed_out=c.timeout,
            cancelled=c.cancelled,
            retried=retried,
            p50_ms=p50,
            p95_ms=p95,
            p99_ms=p99,
            throughput=recent / span,
            elapsed_s=elapsed,
            timing=mean_timing(timings),
        )
