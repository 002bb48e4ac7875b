"""LoadJob: the same images sent N times at a fixed concurrency, for throughput and latency.

The measuring side of `bench` and of the viewer's load test: one request group whose
window is the concurrency level, latencies of the successful requests, a cancel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.errors import SessionClosedError
from app.inference.result import InferenceResult


@dataclass(frozen=True)
class LoadFigures:
    requests: int
    ok: int
    failed: int
    seconds: float
    throughput: float  # completed requests per second
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    first_error: str | None = None


def figures_of(
    latencies_ms: Sequence[float], requests: int, failed: int, seconds: float, error: str | None
) -> LoadFigures:
    lat = np.asarray(latencies_ms, np.float64)
    p50, p95, p99 = (float(v) for v in np.percentile(lat, [50, 95, 99])) if lat.size else (None,) * 3
    return LoadFigures(
        requests=requests,
        ok=requests - failed,
        failed=failed,
        seconds=round(seconds, 4),
        throughput=round(requests / seconds, 2) if seconds > 0 else 0.0,
        p50_ms=None if p50 is None else round(p50, 3),
        p95_ms=None if p95 is None else round(p95, 3),
        p99_ms=None if p99 is None else round(p99, 3),
        first_error=error,
    )


class LoadJob:
    """`run()` blocks until every request has ended (or `cancel()` from another thread)."""

    def __init__(
        self,
        session: TritonSession,
        images: Sequence[np.ndarray],
        requests: int,
        concurrency: int,
        on_done: Callable[[bool], None] | None = None,  # each request: ok? (any thread)
    ) -> None:
        if not images:
            raise ValueError("a load job needs at least one image")
        self.session = session
        self.images = list(images)
        self.requests = requests
        self.group = session.group(concurrency, "load")
        self._on_done = on_done
        self._cond = threading.Condition()
        self._latencies: list[float] = []
        self._ended = 0
        self._sent = 0
        self._failed = 0
        self._first_error: str | None = None

    def cancel(self) -> None:
        self.group.cancel()

    def _done(self, result: InferenceResult) -> None:
        with self._cond:
            self._ended += 1
            if result.ok:
                self._latencies.append(result.latency_ms or 0.0)
            else:
                self._failed += 1
                self._first_error = self._first_error or result.error or result.status.value
            self._cond.notify_all()
        if self._on_done is not None:
            self._on_done(result.ok)

    def run(self) -> LoadFigures:
        t0 = time.perf_counter()
        for i in range(self.requests):
            try:
                request_id = self.group.submit(self.images[i % len(self.images)], self._done, source="load")
            except SessionClosedError:
                request_id = None
            if request_id is None:  # cancelled
                break
            self._sent += 1
        with self._cond:
            self._cond.wait_for(lambda: self._ended >= self._sent)
            seconds = time.perf_counter() - t0
            return figures_of(self._latencies, self._sent, self._failed, seconds, self._first_error)
