"""The statistics kit: percentiles equal numpy's on the same data, bounded and timed latency
windows, counts of how inputs ended."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.inference.core.tally import LatencyWindow, StatusCounts, percentiles
from app.inference.result import Status

QS = (0, 1, 25, 50, 90, 95, 99, 99.9, 100)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_percentiles_equal_numpys_on_the_same_data(n: int) -> None:
    rng = np.random.default_rng(n)
    data = rng.lognormal(2.0, 0.8, n)  # latencies have a long tail
    expected = np.percentile(data, QS)
    assert percentiles(data.tolist(), QS) == tuple(float(v) for v in expected)
    window = LatencyWindow()
    for v in data:
        window.add(float(v))
    assert window.percentiles(*QS) == tuple(float(v) for v in expected)
    assert len(window) == n


def test_no_value_has_no_percentile() -> None:
    assert percentiles([], (50, 95)) == (None, None)
    assert LatencyWindow(10).percentiles(50, 95, 99) == (None, None, None)


def test_a_bounded_window_keeps_the_latest_values() -> None:
    window = LatencyWindow(3)
    for v in (100.0, 1.0, 2.0, 3.0):
        window.add(v)
    assert window.values() == [1.0, 2.0, 3.0]
    assert window.percentiles(50, 100) == (2.0, 3.0)
    window.clear()
    assert len(window) == 0


def test_a_timed_window_forgets_what_is_older_than_its_horizon() -> None:
    now = [100.0]
    window = LatencyWindow(horizon_s=10.0, clock=lambda: now[0])
    window.add(500.0)  # at 100
    now[0] = 105.0
    window.add(5.0)
    assert window.values() == [500.0, 5.0]
    now[0] = 112.0  # the first is 12 s old, the second 7 s
    assert window.values() == [5.0] and window.percentiles(99) == (5.0,)
    assert window.values(now=104.0) == [500.0, 5.0]


def test_adds_from_many_threads_are_all_kept() -> None:
    window = LatencyWindow()

    def add() -> None:
        for i in range(1000):
            window.add(float(i))

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(window) == 4000
    assert window.percentiles(50) == (float(np.percentile(list(range(1000)) * 4, 50)),)


def test_status_counts_count_each_ending_and_stay_values() -> None:
    counts = StatusCounts()
    for status in (Status.OK, Status.OK, Status.FAILED, Status.TIMEOUT, Status.CANCELLED, Status.SKIPPED):
        counts = counts.add(status)
    counts = counts.add_sent(5).add_not_started(2)
    assert (counts.sent, counts.ok, counts.failed, counts.timeout, counts.cancelled, counts.skipped) == (
        5,
        2,
        1,
        1,
        1,
        1,
    )
    assert counts.not_started == 2
    assert counts.ended == 6 and counts.unsuccessful == 3
    assert [counts.of(s) for s in Status] == [2, 1, 1, 1, 1]
    assert StatusCounts().ended == 0, "adding never changes the value added to"
