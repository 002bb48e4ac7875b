"""A dataset's images through the normal pipeline: `BatchJob` (the same one `infer` and the
viewer's batches run: every transport, client batching, retries), one result per image,
kept by dataset image index, with the speed of the run.

Threads: `run()` feeds on the calling thread (the CLI's main thread; a thread of its own in
a GUI, via `start()`); results arrive on the session's worker threads and are only stored
(under a lock) and passed to `on_result`, which must hand off."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from app.evaluation.datasets.model import Dataset
from app.inference.core.session import TritonSession
from app.inference.core.stats import TimingTotals
from app.inference.introspection.server_stats import ServerCounters, split
from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts, BatchJob, VideoPolicy

log = logging.getLogger(__name__)


class DatasetRun:
    def __init__(
        self,
        session: TritonSession,
        dataset: Dataset,
        *,
        window: int = 8,
        on_result: Callable[[int, InferenceResult], None] | None = None,
        on_started: Callable[[int], None] | None = None,
        on_thumbnail: Callable[[str, np.ndarray], None] | None = None,
        readers: int = 0,
        earlier: Mapping[str, InferenceResult] | None = None,
    ) -> None:
        """`on_thumbnail(source, image)`: an image was read (the feeding thread; the viewer
        shows the dataset's images as its batch). `earlier`: results by source an earlier
        run recorded (a resumed run): kept, and their images not sent again."""
        self.session = session
        self.dataset = dataset
        self._on_result = on_result
        self._index = {str(Path(image.path)): i for i, image in enumerate(dataset.images)}
        self._lock = threading.Lock()
        self.results: dict[int, InferenceResult] = {}
        for source, result in (earlier or {}).items():
            index = self._index.get(str(Path(source)))
            if index is not None:
                self.results[index] = result
        self.carried = len(self.results)  # of an earlier run: not this run's throughput
        self.timing = TimingTotals()
        self.seconds = 0.0
        self.counts: BatchCounts | None = None
        self.interrupted = False
        self.error: str | None = None  # why a run started with start() ended early
        self._server_before: ServerCounters | None = None
        self._server_after: ServerCounters | None = None
        self.job = BatchJob(
            session,
            [image.path for image in dataset.images],
            self._result,
            window=window,
            videos=VideoPolicy.REFUSE,
            on_started=on_started,
            on_thumbnail=on_thumbnail,
            readers=readers,
            done={(str(dataset.images[i].path), None) for i in self.results},
        )

    def _result(self, result: InferenceResult) -> None:
        index = self._index.get(str(Path(result.source))) if result.source is not None else None
        if index is None:
            return  # not an image of the dataset (cannot happen: the job gets only those)
        self.timing.add(result.timing)
        with self._lock:
            self.results[index] = result
        if self._on_result is not None:
            self._on_result(index, result)

    def cancel(self) -> None:
        """Stop feeding and cancel what is in flight (any thread; returns at once)."""
        self.job.cancel()

    def start(self, on_finished: Callable[[DatasetRun], None] | None = None) -> threading.Thread:
        """`run()` on a thread of its own (a GUI must not block); `on_finished(self)` is called
        from that thread once every image has its result or the run was cancelled."""

        def target() -> None:
            try:
                self.run()
            except Exception as e:  # e.g. the session closed under it: said, not raised in a thread
                self.error = str(e)
                log.exception("dataset run failed")
            finally:
                if on_finished is not None:
                    on_finished(self)

        thread = threading.Thread(target=target, name="dataset-run", daemon=True)
        thread.start()
        return thread

    def run(self) -> BatchCounts:
        """Every image once (blocking); KeyboardInterrupt cancels what is in flight and is
        re-raised after the counts are kept."""
        self._server_before = _counters(self.session)
        t0 = time.monotonic()
        try:
            self.counts = self.job.run()
        except KeyboardInterrupt:
            self.interrupted = True
            self.counts = self.job.counts()
            raise
        finally:
            self.seconds = time.monotonic() - t0
            self._server_after = _counters(self.session) if self._server_before is not None else None
        return self.counts

    def speed(self) -> dict[str, Any]:
        """p50/p95 latency of the answered images, throughput over the run, the transport,
        and the client's and the server's time split (means per request)."""
        with self._lock:
            results = list(self.results.values())
        latencies = np.array([r.latency_ms for r in results if r.ok and r.latency_ms is not None])
        speed: dict[str, Any] = {
            "images": len(results),
            "seconds": round(self.seconds, 3),
            "throughput": round((len(results) - self.carried) / self.seconds, 2)
            if self.seconds > 0
            else None,
            "latency_p50_ms": round(float(np.percentile(latencies, 50)), 3) if latencies.size else None,
            "latency_p95_ms": round(float(np.percentile(latencies, 95)), 3) if latencies.size else None,
            "transport": self.session.transport.kind.value if self.session.transport else None,
            "transport_detail": self.session.describe_transport(),
        }
        timing: dict[str, Any] = {}
        means = self.timing.means()
        if means is not None:
            timing.update(means.to_record())
        if self._server_before is not None and self._server_after is not None:
            server = split(self._server_before, self._server_after)
            if server is not None:
                timing.update(server.to_record())
        speed["timing"] = timing
        return speed


def _counters(session: TritonSession) -> ServerCounters | None:
    """Triton's cumulative statistics now (None when the server does not give them)."""
    try:
        return session.read_server_counters()
    except Exception:  # statistics are a bonus: never fail a run for them
        return None
