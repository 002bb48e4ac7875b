"""What a tune's measurements say: the Pareto front of throughput against p95 latency, and the
setting to recommend with its speedup over the model's original config."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.pipeline.sweep import LevelResult, find_knee, noise_note, series
from app.pipeline.tune_settings import TrialSettings


@dataclass
class TrialResult:
    settings: TrialSettings
    original: bool  # the model's config as it was when the tune started
    levels: list[LevelResult] = field(default_factory=list)
    error: str | None = None  # the load failed (the server's reason) or the sweep could not run
    load_seconds: float | None = None  # None: measured as found, no load
    server_metrics: dict[str, float | None] | None = None  # Prometheus figures while measuring

    def usable_levels(self) -> list[LevelResult]:
        """Levels that count: measured, every request answered."""
        return [lv for lv in self.levels if lv.failed == 0 and lv.p95_ms is not None and lv.throughput > 0]


@dataclass(frozen=True)
class Point:
    settings: TrialSettings
    level: LevelResult


@dataclass(frozen=True)
class Recommendation:
    settings: TrialSettings
    level: LevelResult
    original_level: LevelResult | None  # the original config at the same load
    reason: str

    @property
    def speedup(self) -> float | None:
        """Throughput against the original config's at the same concurrency, transport and
        client batch (the same offered load), both measured in this run."""
        if self.original_level is None or self.original_level.throughput <= 0:
            return None
        return self.level.throughput / self.original_level.throughput


def pareto_front(trials: Sequence[TrialResult]) -> list[Point]:
    """The points no other point beats on both throughput (higher) and p95 (lower), by
    ascending p95."""
    points = [Point(t.settings, lv) for t in trials for lv in t.usable_levels()]
    front = []
    for p in points:
        assert p.level.p95_ms is not None
        dominated = any(
            q is not p
            and q.level.p95_ms is not None
            and q.level.throughput >= p.level.throughput
            and q.level.p95_ms <= p.level.p95_ms
            and (q.level.throughput > p.level.throughput or q.level.p95_ms < p.level.p95_ms)
            for q in points
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: (p.level.p95_ms or 0.0, -p.level.throughput))


def best_level(levels: Sequence[LevelResult], budget_ms: float | None) -> LevelResult | None:
    """Within a budget: the highest throughput whose p95 fits. Without: each series' knee (or
    its highest throughput when it has none), the best of those."""
    if budget_ms is not None:
        fitting = [lv for lv in levels if lv.p95_ms is not None and lv.p95_ms <= budget_ms]
        return max(fitting, key=lambda lv: (lv.throughput, -(lv.p95_ms or 0.0)), default=None)
    picks = []
    for one_series in series(levels).values():
        knee = find_knee(one_series)
        picks.append(knee or max(one_series, key=lambda lv: lv.throughput))
    return max(picks, key=lambda lv: lv.throughput, default=None)


def _same_load(levels: Sequence[LevelResult], like: LevelResult) -> LevelResult | None:
    key = (like.concurrency, like.transport, like.client_batch)
    return next((lv for lv in levels if (lv.concurrency, lv.transport, lv.client_batch) == key), None)


def recommend(trials: Sequence[TrialResult], budget_ms: float | None) -> tuple[Recommendation | None, str]:
    """The recommended trial and level, or None with the reason."""
    best: tuple[TrialResult, LevelResult] | None = None
    for trial in trials:
        pick = best_level(trial.usable_levels(), budget_ms)
        if pick is None:
            continue
        if best is None or (pick.throughput, trial.original) > (best[1].throughput, best[0].original):
            best = (trial, pick)
    if best is None:
        if budget_ms is not None:
            return None, f"no trial had a level with p95 within {budget_ms:g} ms: raise the budget"
        return None, "no trial was measured"
    trial, level = best
    original = next((t for t in trials if t.original), None)
    original_level = _same_load(original.levels, level) if original is not None else None
    rule = (
        f"the highest throughput with p95 within {budget_ms:g} ms"
        if budget_ms is not None
        else "the highest throughput at a knee (or the top level where throughput still grew)"
    )
    same_series = [
        lv for lv in trial.levels if (lv.transport, lv.client_batch) == (level.transport, level.client_batch)
    ]
    rule += noise_note(same_series)  # "" unless the chosen trial's measurements were noisy
    recommendation = Recommendation(trial.settings, level, original_level, rule)
    return recommendation, rule
