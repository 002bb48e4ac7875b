"""Statistics by scope, with a fake clock: counts by how inputs ended, percentiles that keep
their value when the stream pauses, a rate over a stated window, resets only when asked."""

from __future__ import annotations

from app.inference.result import InferenceResult, Status
from app.ui.analysis.scoped_stats import LATENCY_WINDOW, RATE_WINDOW_S, Scope, ScopedStats


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def result(status: Status, latency: float | None = None, sent: bool = True) -> InferenceResult:
    return InferenceResult("r" if sent else None, status, "x.png", latency_ms=latency)


def test_counts_are_inputs_by_outcome_in_their_scope_and_the_session() -> None:
    clock = Clock()
    stats = ScopedStats(clock, wall=lambda: 0.0)
    for r in (
        result(Status.OK, 5.0),
        result(Status.OK, 7.0),
        result(Status.FAILED, sent=False),  # an unreadable file: failed, never a request
        result(Status.TIMEOUT),
        result(Status.SKIPPED, sent=False),
    ):
        stats.add(r, Scope.BATCH)
    stats.add(result(Status.CANCELLED), Scope.LIVE)
    batch = stats.snapshot(Scope.BATCH)
    assert (batch.inputs, batch.sent, batch.ok, batch.failed, batch.timed_out, batch.skipped) == (
        5,
        3,
        2,
        1,
        1,
        1,
    )
    live = stats.snapshot(Scope.LIVE)
    assert (live.inputs, live.cancelled, live.ok) == (1, 1, 0)
    session = stats.snapshot(Scope.SESSION)
    assert session.inputs == 6 and session.failed == 1 and session.cancelled == 1


def test_percentiles_stay_when_idle_and_the_rate_goes_to_zero() -> None:
    clock = Clock()
    stats = ScopedStats(clock)
    for i in range(20):
        clock.now += 0.1
        stats.add(result(Status.OK, 10.0 + i), Scope.LIVE)
    busy = stats.snapshot(Scope.LIVE)
    assert busy.p50_ms is not None and 19 <= busy.p50_ms <= 20
    assert abs(busy.requests_per_s - 20 / 2.0) < 1e-6  # 20 results over the 2 s since it began
    clock.now += RATE_WINDOW_S + 1  # the stream pauses
    idle = stats.snapshot(Scope.LIVE)
    assert idle.p50_ms == busy.p50_ms and idle.p99_ms == busy.p99_ms, "no flicker to '-'"
    assert idle.requests_per_s == 0.0
    assert idle.ok == 20


def test_percentiles_are_over_the_last_window_of_successes() -> None:
    stats = ScopedStats(Clock())
    for _ in range(LATENCY_WINDOW):
        stats.add(result(Status.OK, 1000.0), Scope.BATCH)
    for _ in range(LATENCY_WINDOW):
        stats.add(result(Status.OK, 5.0), Scope.BATCH)
    snap = stats.snapshot(Scope.BATCH)
    assert snap.p99_ms == 5.0 and snap.latency_samples == LATENCY_WINDOW


def test_reset_one_scope_keeps_the_others_and_says_when() -> None:
    wall = iter([1.0, 2.0, 3.0, 50.0]).__next__
    stats = ScopedStats(Clock(), wall=wall)
    stats.add(result(Status.OK, 5.0), Scope.BATCH)
    stats.reset(Scope.BATCH, "batch started")
    assert stats.snapshot(Scope.BATCH).inputs == 0
    assert stats.snapshot(Scope.BATCH).note == "batch started" and stats.snapshot(Scope.BATCH).since == 50.0
    assert stats.snapshot(Scope.SESSION).inputs == 1, "the session keeps counting"
