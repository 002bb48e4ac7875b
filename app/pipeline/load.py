"""LoadJob: the same images sent N times at a fixed concurrency, for throughput and latency.

The measuring side of `bench` and of the viewer's load test: one request group whose
window is the concurrency level, latencies of the successful requests, a cancel.
"""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.core.tally import LatencyWindow, percentiles
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
    # Throughput over consecutive parts of the steady stretch (see steady_rates): how much it
    # varied while the level ran. Empty when too few requests ended to tell.
    rates: tuple[float, ...] = ()


MIN_PER_PART = 10  # completions per part of the steady stretch, at least
MAX_PARTS = 4


def steady_rates(done_at: Sequence[float], concurrency: int) -> tuple[float, ...]:
    """Throughput (per second) over up to MAX_PARTS consecutive parts of the steady stretch of a
    level: from the first request that ended (before it the window was filling) to the one that
    let the last request be sent (after it fewer than `concurrency` are in flight). `done_at`:
    when each request ended (any order, seconds)."""
    times = sorted(done_at)
    steady = times[: max(len(times) - concurrency + 1, 0)]
    parts = min(MAX_PARTS, (len(steady) - 1) // MIN_PER_PART)
    if parts < 2:
        return ()
    bounds = [round(k * (len(steady) - 1) / parts) for k in range(parts + 1)]
    rates = []
    for a, b in itertools.pairwise(bounds):
        seconds = steady[b] - steady[a]
        if seconds <= 0:
            return ()  # a clock too coarse to tell
        rates.append(round((b - a) / seconds, 2))
    return tuple(rates)


def figures_of(
    latencies_ms: Iterable[float],
    requests: int,
    failed: int,
    seconds: float,
    error: str | None,
    rates: Sequence[float] = (),
) -> LoadFigures:
    p50, p95, p99 = percentiles(latencies_ms, (50, 95, 99))
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
        rates=tuple(rates),
    )


class LoadJob:
    """`run()` blocks until every request has ended (or `cancel()` from another thread).
    Its request group counts how they ended and says when the last one was handed on."""

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
        self._latencies = LatencyWindow()  # every success of the level
        self.concurrency = concurrency
        # When each request ended (list.append is atomic: results end on several threads).
        self._done_at: list[float] = []
        self._errors: queue.SimpleQueue[str] = queue.SimpleQueue()  # the first one is reported

    def cancel(self) -> None:
        self.group.cancel()

    def _done(self, result: InferenceResult) -> None:
        self._done_at.append(time.perf_counter())
        if result.ok:
            self._latencies.add(result.latency_ms or 0.0)
        elif self._errors.empty():
            self._errors.put(result.error or result.status.value)
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
        self.group.close()
        self.group.wait_drained()
        seconds = time.perf_counter() - t0
        counts = self.group.counts
        error = None if self._errors.empty() else self._errors.get()
        rates = steady_rates(self._done_at, self.concurrency)
        return figures_of(self.latencies(), counts.sent, counts.unsuccessful, seconds, error, rates)

    def latencies(self) -> list[float]:
        """The latencies (ms) of the successful requests (a sweep pools repeated runs)."""
        return list(self._latencies.values())
