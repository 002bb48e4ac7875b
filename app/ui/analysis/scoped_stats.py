"""Statistics by scope (this batch, the live stream, the whole session), counted from the
results the viewer receives, so every figure agrees with the log, the strip and the batch
summary. Plain Python (no Qt): fed and read on the GUI thread.

- Counts are of inputs by how they ended (a file that could not be read is a failed input
  although it never became a request; "sent" counts requests).
- Latency percentiles are over the last `LATENCY_WINDOW` successful requests: a stated
  window that does not empty out (and show "-") when the stream pauses.
- Requests/s is over the last `RATE_WINDOW_S` seconds (0 when idle: it is true).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.inference.core.tally import LatencyWindow, StatusCounts
from app.inference.result import InferenceResult, Status
from app.ui.state.viewer_state import Scope

LATENCY_WINDOW = 200
RATE_WINDOW_S = 10.0


SCOPE_TITLES = {
    Scope.SESSION: "Everything (this session)",
    Scope.BATCH: "This batch",
    Scope.LIVE: "Live stream",
}


@dataclass(frozen=True)
class ScopeSnapshot:
    scope: Scope
    since: float  # time.time() the scope started (or was reset)
    note: str  # why it started then: "batch started", "reset", ...
    inputs: int  # results received (every input ends once)
    sent: int  # of which became requests
    ok: int
    failed: int
    timed_out: int
    cancelled: int
    skipped: int
    not_started: int  # batch inputs never sent (the batch was cancelled first)
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    latency_samples: int  # how many successful requests the percentiles are over
    requests_per_s: float


class ScopeStats:
    def __init__(
        self,
        scope: Scope,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.scope = scope
        self._clock, self._wall = clock, wall
        self._latencies = LatencyWindow(LATENCY_WINDOW)
        self._finishes: collections.deque[float] = collections.deque()
        self.reset("started")

    def reset(self, note: str) -> None:
        self.counts = StatusCounts()
        self._latencies.clear()
        self._finishes.clear()
        self._started = self._clock()
        self.since = self._wall()
        self.note = note

    def add(self, result: InferenceResult) -> None:
        self.counts = self.counts.add(result.status)
        if result.status is Status.OK and result.latency_ms is not None:
            self._latencies.add(result.latency_ms)
        if result.request_id is not None:
            self.counts = self.counts.add_sent()
            now = self._clock()
            self._finishes.append(now)
            self._trim(now)

    def _trim(self, now: float) -> None:
        horizon = now - RATE_WINDOW_S
        while self._finishes and self._finishes[0] < horizon:
            self._finishes.popleft()

    def snapshot(self) -> ScopeSnapshot:
        now = self._clock()
        self._trim(now)
        span = min(RATE_WINDOW_S, max(now - self._started, 1e-3))
        p50, p95, p99 = self._latencies.percentiles(50, 95, 99)
        c = self.counts
        return ScopeSnapshot(
            self.scope,
            self.since,
            self.note,
            c.ended,
            c.sent,
            c.ok,
            c.failed,
            c.timeout,
            c.cancelled,
            c.skipped,
            c.not_started,
            p50,
            p95,
            p99,
            len(self._latencies),
            len(self._finishes) / span,
        )

    def set_not_started(self, n: int) -> None:
        """Inputs of a cancelled batch never sent: not results, but part of its summary."""
        self.counts = self.counts._replace(not_started=n)


class ScopedStats:
    """The three scopes; `add(result, scope)` counts a result in its scope and the session's."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time):
        self.scopes = {s: ScopeStats(s, clock, wall) for s in Scope}

    def add(self, result: InferenceResult, scope: Scope) -> None:
        self.scopes[scope].add(result)
        if scope is not Scope.SESSION:
            self.scopes[Scope.SESSION].add(result)

    def reset(self, scope: Scope, note: str) -> None:
        self.scopes[scope].reset(note)

    def snapshot(self, scope: Scope) -> ScopeSnapshot:
        return self.scopes[scope].snapshot()
