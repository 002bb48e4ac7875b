"""Small helpers for the session tests: delayed images for slow_faces, result collectors."""

from __future__ import annotations

import collections
import threading

import numpy as np

from app.inference.result import InferenceResult


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
