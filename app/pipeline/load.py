"""LoadJob: the same images sent N times at a fixed concurrency, for throughput and latency.

The measuring side of `bench` and of the viewer's load test: one request group whose
window is the concurrency level, latencies of the successful requests, a cancel.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Sequence

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.core.tally import LatencyWindow
from app.inference.errors import SessionClosedError
from app.inference.result import InferenceResult
from app.pipeline.load_figures import LoadFigures, figures_of, steady_rates


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
