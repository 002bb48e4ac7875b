"""`LoadFigures`: what a run at one concurrency level measured (throughput, latency
percentiles, how steady it was), for the app's load job and for the plain baseline loops
alike. Light on purpose (numpy and the statistics kit): a plain client script imports it
without the session.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.inference.core.tally import percentiles


@dataclass(frozen=True)
class LoadFigures:
    requests: int
    ok: int
    failed: int
    seconds: float
    # Successful requests per second (0.0 when none succeeded: a level that only failed has no
    # throughput, and its records say null).
    throughput: float
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
        # Failed requests are not throughput: a server answering every request with an error at
        # once made a level look fast (586 req/s with none done).
        throughput=round((requests - failed) / seconds, 2) if seconds > 0 else 0.0,
        p50_ms=None if p50 is None else round(p50, 3),
        p95_ms=None if p95 is None else round(p95, 3),
        p99_ms=None if p99 is None else round(p99, 3),
        first_error=error,
        rates=tuple(rates),
    )
