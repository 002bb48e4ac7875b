"""Small helpers for the session tests: delayed images for slow_faces, result collectors."""

from __future__ import annotations

import collections
import random
import threading
import time
from collections.abc import Callable

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult, Status


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether `condition` came true within `timeout` s: a wait for something to happen (never a
    fixed sleep standing in for "it did not happen")."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def delayed_image(delay_ms: int, size: tuple[int, int] = (64, 64)) -> np.ndarray:
    """An image slow_faces answers after about `delay_ms` (pixel [0,0,0] x 10 ms)."""
    image = np.zeros((*size, 3), np.uint8)
    image[0, 0, 0] = min(255, delay_ms // 10)
    return image


class Collector:
    """Collects results from any thread; counts deliveries per request id."""

    def __init__(self) -> None:
        self.results: list[InferenceResult] = []
        self.deliveries: collections.Counter[str] = collections.Counter()
        self.threads: set[str] = set()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    def __call__(self, result: InferenceResult) -> None:
        with self._cond:
            self.results.append(result)
            self.deliveries[result.request_id] += 1
            self.threads.add(threading.current_thread().name)
            self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = 30.0) -> list[InferenceResult]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.results) >= count, timeout), (
                f"{len(self.results)} of {count} results arrived"
            )
            return list(self.results)


def hammer(session: TritonSession, total: int, seed: int) -> tuple[Collector, list[str]]:
    """`total` requests of mixed delays and timeouts (50 ms, 200 ms, 5 s) to slow_faces, in one
    request group, while another thread cancels random ones: every way a request can end,
    all at once. Returns the collector (every result delivered) and the ids submitted, once
    the group has drained (exactly once, after the last result). The caller checks after
    closing the session: its workers have stopped, so a late duplicate would be there."""
    rng = random.Random(seed)
    collect = Collector()
    ids: list[str] = []
    drained: list[int] = []  # results handed on when drained was called
    group = session.group(
        session.spec.limits.max_in_flight, "hammer", lambda: drained.append(len(collect.results))
    )

    def canceller() -> None:
        while len(collect.results) < total:
            if ids:
                session.cancel(rng.choice(ids))
            time.sleep(0.004)

    thread = threading.Thread(target=canceller)
    thread.start()
    for _ in range(total):
        timeout = rng.choice([0.05, 0.2, 5.0])
        request_id = group.submit(delayed_image(rng.choice([0, 0, 100, 300])), collect, timeout_s=timeout)
        assert request_id is not None
        ids.append(request_id)
    group.close()
    assert group.wait_drained(90), f"{len(collect.results)} of {total} results arrived"
    thread.join()
    assert drained == [total], "drained once, after the last result was handed on"
    counts = group.counts
    assert counts.sent == counts.ended == total and group.unfinished == 0
    for status in (Status.OK, Status.TIMEOUT, Status.CANCELLED, Status.FAILED):
        assert counts.of(status) == sum(r.status is status for r in collect.results), status
    return collect, ids


def assert_each_ended_once(collect: Collector, ids: list[str]) -> dict[Status, int]:
    """Every id delivered exactly once, no failure, each of ok, timeout and cancelled seen."""
    assert len(collect.results) == len(ids) and set(collect.deliveries) == set(ids)
    assert max(collect.deliveries.values()) == 1
    statuses = {s: sum(r.status is s for r in collect.results) for s in Status}
    assert min(statuses[Status.OK], statuses[Status.TIMEOUT], statuses[Status.CANCELLED]) > 0, statuses
    assert statuses[Status.FAILED] == 0, statuses
    return statuses
