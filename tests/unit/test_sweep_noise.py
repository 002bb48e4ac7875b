"""A knee that survives noise (app/pipeline/sweep.py, app/pipeline/load.py): the spread of a
level from its steady stretch, and a knee and recommendation that never pick a level whose
throughput is clearly below a later one's, on synthetic noisy curves."""

from __future__ import annotations

import random

import pytest

from app.pipeline.load_figures import steady_rates
from app.pipeline.sweep import (
    KNEE_GAIN,
    NOISY_SPREAD,
    LevelResult,
    clearly_above,
    find_knee,
    margin,
    recommend,
    spread_of,
)


def level(
    c: int, throughput: float, p95: float, spread: float | None = None, noisy: bool = False, runs: int = 1
) -> LevelResult:
    return LevelResult(
        c, "grpc", 1, throughput, p95 / 2, p95, p95 * 1.2, 0, 1.0, 2.0, spread=spread, runs=runs, noisy=noisy
    )


def test_the_issues_curve_no_longer_recommends_two_in_flight() -> None:
    """'use 2 in flight … throughput hardly grows' while 16 in flight gave 1.7x more: the dip at 4
    was noise. The first dip is not the knee; the recommendation is not below a later level."""
    levels = [
        level(1, 95, 11, 0.04),
        level(2, 180, 12, 0.18, noisy=True, runs=3),
        level(4, 176, 25, 0.22, noisy=True, runs=3),
        level(8, 262, 33, 0.09),
        level(16, 306, 58, 0.08),
    ]
    best, sentence = recommend(levels)
    assert best is not None and best.concurrency == 16, sentence
    assert "2 in flight" not in sentence
    # Marked as noisy, with the spread shown and where.
    assert "noisy" in sentence and "±22%" in sentence and "2, 4 in flight" in sentence
    assert "measured 3 times" in sentence


def test_a_steady_knee_is_still_found_and_not_called_noisy() -> None:
    levels = [level(1, 100, 10, 0.02), level(2, 190, 11, 0.03), level(4, 300, 14, 0.02)]
    levels += [level(8, 306, 26, 0.03), level(16, 309, 50, 0.02)]
    knee = find_knee(levels)
    assert knee is not None and knee.concurrency == 4
    _, sentence = recommend(levels)
    assert "4 in flight" in sentence and "noisy" not in sentence


def test_the_margin_is_the_gain_or_the_spread_but_bounded() -> None:
    assert margin(level(1, 100, 10), level(2, 100, 10)) == KNEE_GAIN  # spread unknown
    assert margin(level(1, 100, 10, 0.12), level(2, 100, 10, 0.02)) == 0.12
    assert margin(level(1, 100, 10, 0.9), level(2, 100, 10, 0.9)) == 0.25  # never "anything goes"
    # 20% more with ±12% noise is clearly more; 10% more is not.
    assert clearly_above(level(2, 120, 10, 0.12), level(1, 100, 10, 0.12))
    assert not clearly_above(level(2, 110, 10, 0.12), level(1, 100, 10, 0.12))


@pytest.mark.parametrize("seed", range(200))
def test_noisy_synthetic_curves_never_recommend_a_level_clearly_below_a_later_one(seed: int) -> None:
    """A saturating curve (throughput grows, then flattens at a random level) measured with up to
    ±30% noise: whatever the draw, the recommended level is not clearly below a later level,
    and a knee, when found, has a later level with a higher p95."""
    rng = random.Random(seed)
    top, knee_at, noise = rng.uniform(50, 2000), rng.choice([1, 2, 4, 8, 16, 32]), rng.uniform(0.0, 0.3)
    levels = []
    for c in (1, 2, 4, 8, 16, 32):
        true = top * min(c, knee_at) / knee_at
        parts = [true * (1 + rng.uniform(-noise, noise)) for _ in range(4)]
        measured = sum(parts) / len(parts)
        spread = spread_of(parts)
        p95 = 10.0 * max(1.0, c / knee_at) * (1 + rng.uniform(0, noise))
        levels.append(level(c, measured, p95, spread, noisy=(spread or 0) > NOISY_SPREAD))
    best, sentence = recommend(levels)
    assert best is not None
    later = [lv for lv in levels if lv.concurrency > best.concurrency]
    assert not any(clearly_above(other, best) for other in later), (levels, sentence)
    knee = find_knee(levels)
    if knee is not None:
        after = [lv for lv in levels if lv.concurrency > knee.concurrency]
        assert any((lv.p95_ms or 0) > (knee.p95_ms or 0) for lv in after)
    assert ("noisy" in sentence) == any(lv.noisy for lv in levels)


def test_spread_is_the_half_range_over_the_median_without_one_stall() -> None:
    assert spread_of([100, 100, 100, 100]) == 0.0
    assert spread_of([90, 100, 110]) == 0.1
    # Six parts or more: the highest and the lowest are left out.
    assert spread_of([100, 101, 99, 100, 100, 20]) == pytest.approx(0.005)  # 99..100
    assert spread_of([100]) is None and spread_of([]) is None


def test_steady_rates_leave_out_the_filling_and_the_draining_of_the_window() -> None:
    """8 in flight, 100 requests at exactly 200/s once the window is full; the first answer
    comes after 40 ms (the window filling) and the last 7 as the window drains, slower."""
    concurrency = 8
    steady = [0.040 + i / 200 for i in range(93)]
    draining = [steady[-1] + 0.02 * (k + 1) for k in range(7)]
    rates = steady_rates(list(reversed(steady + draining)), concurrency)  # any order
    assert len(rates) == 4 and all(r == pytest.approx(200.0) for r in rates)
    # The rate halves midway: the parts show it.
    changing = [i / 200 for i in range(50)] + [0.25 + i / 100 for i in range(50)]
    rates = steady_rates(changing, 1)
    assert max(rates) / min(rates) == pytest.approx(2.0, rel=0.1) and spread_of(rates) > NOISY_SPREAD
    # Too few answers to tell.
    assert steady_rates([0.01 * i for i in range(15)], 2) == ()


def test_the_tunes_recommendation_says_when_its_trial_was_noisy() -> None:
    """`tune` picks its trial's level with the same knee; its reason names the noise too."""
    from app.pipeline.tune_analysis import TrialResult
    from app.pipeline.tune_analysis import recommend as recommend_trial
    from app.pipeline.tune_settings import TrialSettings

    steady = [level(1, 50, 20, 0.03), level(4, 52, 80, 0.02)]
    noisy = [level(1, 60, 20, 0.3, noisy=True, runs=3), level(4, 140, 30, 0.05), level(8, 144, 60, 0.04)]
    trials = [
        TrialResult(TrialSettings(1, 8, None), True, steady),
        TrialResult(TrialSettings(2, 8, 2000), False, noisy),
    ]
    rec, reason = recommend_trial(trials, None)
    assert rec is not None and rec.level.concurrency == 4  # not the noisy first level
    assert "noisy" in reason and "±30%" in reason and "at 1 in flight" in reason
    _, steady_reason = recommend_trial(trials[:1], None)
    assert "noisy" not in steady_reason
