"""One tune of the viewer, on a worker of the viewer's shared executor: read the images,
prepare the trials, run them, restore the original config (app.pipeline.tune does the work).
Its reports are callables the window made with `GuiBridge.wrap`, so they land on the GUI thread.

A tune holds its worker for minutes: the executor has room for it and a load ramp beside the
short I/O (app.ui.qt_app.IO_WORKERS). `cancel()` from any thread; `wait(timeout)` bounds the
wait for the restore when the viewer closes, without holding a second worker."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from app.inference.core.spec import SessionSpec
from app.inference.errors import SessionError
from app.inference.introspection.metrics_history import MetricsHistory, MetricsPoller
from app.inference.introspection.repository import RepositoryControl, RepositoryError
from app.inference.introspection.server_metrics import MetricsReader
from app.inference.profiles.profile import ProfileError
from app.inference.protocol import Endpoint
from app.pipeline.sweep import Sweep, SweepProgress, load_sweep_images
from app.pipeline.tune import TuneError, TunePlan, TuneProgress, Tuner, TuneResult
from app.pipeline.tune_analysis import TrialResult
from app.pipeline.tune_settings import TrialSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TuneTarget:
    spec: SessionSpec  # one server, the model to tune, its profile, TLS and headers
    paths: tuple[str, ...]  # the images to send (none: the bundled sample)
    metrics_url: str | None  # the server's Prometheus metrics, read during each trial

    @property
    def endpoint(self) -> Endpoint:
        return self.spec.endpoints[0]

    @property
    def model(self) -> str:
        assert self.spec.model is not None
        return self.spec.model


@dataclass(frozen=True)
class TuneReports:
    """Where the worker reports (each already made safe to call from any thread)."""

    planned: Callable[[list[TrialSettings], int], None]  # the trials, the total of requests
    progress: Callable[[TuneProgress], None]
    trial: Callable[[TrialResult], None]
    note: Callable[[str], None]
    # The end: the result (None when the tune could not run), or why it stopped.
    finished: Callable[[TuneResult | None, str], None]


class TuneRunner:
    def __init__(self, target: TuneTarget, plan: TunePlan, reports: TuneReports) -> None:
        self.target, self.plan, self.reports = target, plan, reports
        self._tuner: Tuner | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()  # _tuner between the worker and cancel()
        self._work_done: concurrent.futures.Future[None] | None = None

    def start(self, executor: Executor) -> TuneRunner:
        self._work_done = executor.submit(self._work)
        return self

    @property
    def running(self) -> bool:
        return self._work_done is not None and not self._work_done.done()

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            tuner = self._tuner
        if tuner is not None:
            tuner.cancel()

    async def wait(self, timeout: float) -> bool:
        """Wait (the GUI thread's loop goes on) for the end, restore included; whether it ended."""
        if self._work_done is None:
            return True
        done, _pending = await asyncio.wait([asyncio.wrap_future(self._work_done)], timeout=timeout)
        return bool(done)

    # -- the worker ------------------------------------------------------------------------------
    def _work(self) -> None:
        try:
            result, message = self._tune()
        except Exception as e:  # whatever happens, the window hears of the end
            log.exception("the tune failed")
            result, message = None, f"stopped: {e}"
        self.reports.finished(result, message)

    def _tune(self) -> tuple[TuneResult | None, str]:
        t = self.target
        try:
            images, _names = load_sweep_images(list(t.paths))
        except (OSError, ValueError) as e:
            return None, f"cannot read the images: {e}"
        history = MetricsHistory()
        poller = MetricsPoller(MetricsReader(t.metrics_url), history) if t.metrics_url else None
        tuner: Tuner | None = None
        try:
            with (
                RepositoryControl(t.endpoint, t.spec.connection) as repository,
                poller or contextlib.nullcontext(),
            ):
                tuner = Tuner(
                    repository,
                    t.model,
                    self.plan,
                    lambda model, on_progress: self._sweep(model, images, on_progress),
                    on_progress=self.reports.progress,
                    on_trial=self.reports.trial,
                    on_note=self.reports.note,
                    metrics=history if poller is not None else None,
                )
                with self._lock:
                    self._tuner = tuner
                if self._cancelled.is_set():
                    return None, "cancelled before it started"
                trials = tuner.prepare()
                self.reports.planned(list(trials), tuner.total_requests())
                if self._cancelled.is_set():
                    tuner.cancel()
                result = tuner.run()
            latest = history.latest()
            if poller is not None and latest is not None and not latest.reachable:
                self.reports.note(f"server metrics {latest.state}: no server CPU figures")
            return result, ""
        except TuneError as e:
            restore = f" {tuner.restore_error}" if tuner is not None and tuner.restore_error else ""
            return None, f"stopped: {e}{restore}"
        except (RepositoryError, SessionError, ProfileError) as e:
            return None, f"stopped: {e}"

    def _sweep(
        self, model: str, images: Sequence[np.ndarray], on_progress: Callable[[SweepProgress], None]
    ) -> Sweep:
        spec = dataclasses.replace(self.target.spec, model=model)
        return Sweep(spec, images, self.plan.sweep, on_progress=on_progress)
