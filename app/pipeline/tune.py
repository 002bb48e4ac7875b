"""Tune the server, not only the client: for every combination of server settings asked for
(instances, max batch size, dynamic batching), load the model with that config override,
run the load sweep on the user's own images, and keep what each level measured; then the
Pareto front and a recommendation with its speedup over the original config.

The original config is measured first, as found (no load), and loaded back at the end
whatever happens: a normal end, `cancel()`, an error. `run()` blocks (the CLI's worker
thread, the viewer's); `cancel()` comes from any thread.
"""

from __future__ import annotations

import contextlib
import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.inference.errors import SessionError
from app.inference.introspection.metrics_history import MetricsHistory, summary_of
from app.inference.introspection.model_config import ModelConfigDict
from app.inference.introspection.repository import RepositoryControl, RepositoryError, RepositoryErrorKind
from app.inference.profiles.profile import ProfileError
from app.inference.protocol import Endpoint
from app.inference.redaction import url_without_password
from app.pipeline.sweep import NO_SUCCESS, LevelResult, Sweep, SweepPlan, SweepProgress, stage_notes
from app.pipeline.tune_analysis import Point, Recommendation, TrialResult, pareto_front, recommend
from app.pipeline.tune_settings import (
    TrialSettings,
    apply_settings,
    mark_owner,
    new_trial_mark,
    settings_of,
    trial_mark_of,
    trial_settings,
    without_mark,
)

# Makes the sweep of one trial: (model name, progress callback) -> a Sweep on that model.
SweepFactory = Callable[[str, Callable[[SweepProgress], None]], Sweep]


class TuneError(RuntimeError):
    """The tune cannot go on (no repository control, server gone, bad lists); its message says
    why. The original config has been restored when one was changed, or the message says not."""


@dataclass(frozen=True)
class TunePlan:
    sweep: SweepPlan
    instances: tuple[int, ...] | None = None  # None: chosen from the model's current config
    max_batches: tuple[int, ...] | None = None
    queue_delays: tuple[int | None, ...] | None = None  # None in the tuple: no dynamic batching
    latency_budget_ms: float | None = None


class TunePhase(enum.StrEnum):
    """What a trial is doing (the values are how the command line's progress says them)."""

    LOADING = "loading"  # the trial's config is being loaded
    MEASURING = "measuring"  # the load sweep runs on it
    RESTORING = "restoring"  # the original config is being loaded back


@dataclass(frozen=True)
class TuneProgress:
    trial: int  # 1-based
    trials: int
    settings: TrialSettings
    phase: TunePhase
    step: str  # the sweep's step, e.g. "shm, batch 1, 8 in flight"
    done_requests: int
    total_requests: int
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        """At the rate so far (loads included)."""
        if self.done_requests <= 0:
            return None
        return self.elapsed_s / self.done_requests * max(0, self.total_requests - self.done_requests)


def level_record(level: LevelResult) -> dict[str, Any]:
    record: dict[str, Any] = {
        "concurrency": level.concurrency,
        "transport": level.transport,
        "client_batch": level.client_batch,
        "throughput": None if level.no_success else level.throughput,
        "p50_ms": level.p50_ms,
        "p95_ms": level.p95_ms,
        "p99_ms": level.p99_ms,
        "server_queue_ms": level.server_queue_ms,
        "server_compute_ms": level.server_compute_ms,
        "avg_batch": level.server_avg_batch,
        "executions_per_s": level.server_executions_per_s,
        "failed": level.failed,
        "first_error": level.first_error,
    }
    if level.models is not None:  # a pipeline's stages, as bench's levels have them
        record["models"] = level.models
    return record


def _point_record(settings: TrialSettings, level: LevelResult) -> dict[str, Any]:
    return {
        "settings": settings.to_record(),
        "concurrency": level.concurrency,
        "transport": level.transport,
        "client_batch": level.client_batch,
        "throughput": level.throughput,
        "p95_ms": level.p95_ms,
    }


@dataclass
class TuneResult:
    model: str
    endpoint: Endpoint  # the server tuned
    original_config: ModelConfigDict
    original_settings: TrialSettings
    budget_ms: float | None
    trials: list[TrialResult] = field(default_factory=list)
    pareto: list[Point] = field(default_factory=list)
    recommendation: Recommendation | None = None
    recommendation_reason: str = ""
    interrupted: bool = False
    restored: bool = True  # the original config is back (or was never changed)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The server as the user wrote it (for messages and the record)."""
        return self.endpoint.url

    @property
    def failed_trials(self) -> list[TrialResult]:
        return [t for t in self.trials if t.error is not None]

    def recommended_config(self) -> ModelConfigDict | None:
        """The original config with the recommended settings, nothing else changed."""
        if self.recommendation is None:
            return None
        return apply_settings(without_mark(self.original_config), self.recommendation.settings)

    def to_record(self) -> dict[str, Any]:
        original = next((t for t in self.trials if t.original), None)
        rec = self.recommendation
        recommendation: dict[str, Any] | None = None
        if rec is not None:
            speedup = rec.speedup
            recommendation = {
                **_point_record(rec.settings, rec.level),
                "speedup": None if speedup is None else round(speedup, 3),
                "original_throughput": None if rec.original_level is None else rec.original_level.throughput,
                "original_p95_ms": None if rec.original_level is None else rec.original_level.p95_ms,
                "rule": rec.reason,
            }
        return {
            "model": self.model,
            "url": url_without_password(self.url),
            "original": {
                "settings": self.original_settings.to_record(),
                "levels": [] if original is None else [level_record(lv) for lv in original.levels],
            },
            "trials": [
                {
                    "settings": t.settings.to_record(),
                    "original": t.original,
                    "error": t.error,
                    "load_seconds": None if t.load_seconds is None else round(t.load_seconds, 2),
                    "server_metrics": t.server_metrics,
                    "levels": [level_record(lv) for lv in t.levels],
                }
                for t in self.trials
            ],
            "pareto": [_point_record(p.settings, p.level) for p in self.pareto],
            "recommendation": recommendation,
            "recommendation_reason": self.recommendation_reason,
            "latency_budget_ms": self.budget_ms,
            "interrupted": self.interrupted,
            "restored": self.restored,
            "seconds": round(self.seconds, 1),
            "notes": self.notes,
        }


class Tuner:
    def __init__(
        self,
        repository: RepositoryControl,
        model: str,
        plan: TunePlan,
        new_sweep: SweepFactory,
        *,
        on_progress: Callable[[TuneProgress], None] | None = None,
        on_trial: Callable[[TrialResult], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        metrics: MetricsHistory | None = None,
    ) -> None:
        self.repository = repository
        self.model = model
        self.plan = plan
        self.new_sweep = new_sweep
        self.on_progress = on_progress
        self.on_trial = on_trial
        self.on_note = on_note
        self.metrics = metrics  # filled by the caller's poller: each trial's server figures
        self.original_config: ModelConfigDict | None = None
        self.trials: list[TrialSettings] = []
        self.notes: list[str] = []
        self._cancelled = threading.Event()
        self._sweep: Sweep | None = None
        self._lock = threading.Lock()  # _sweep and _changed between run() and cancel()/restore()
        self._changed = False  # the model is on a trial config now
        self._done_before = 0  # requests of the finished trials
        self._added_before = 0  # runs the finished trials' sweeps added (noisy levels measured again)
        self._t0 = 0.0
        self._current: tuple[int, TrialSettings] | None = None  # the trial under way
        self.restore_error: str | None = None  # why the original config could not be restored
        # On every config this tune loads, from its first load on: another tune of the model
        # on the same server sees it and is refused while this one runs.
        self.mark = new_trial_mark()

    # -- control ------------------------------------------------------------
    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            sweep = self._sweep
        if sweep is not None:
            sweep.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _note(self, text: str) -> None:
        self.notes.append(text)
        if self.on_note is not None:
            self.on_note(text)

    # -- the steps ----------------------------------------------------------
    def prepare(self) -> list[TrialSettings]:
        """Read the model's config (a trial config left by an earlier tune is replaced by the
        repository's first), check that the server lets us load, and work out the trials."""
        config = self._read_config()
        mark = trial_mark_of(config)
        if mark is not None:
            self._refuse_if_owned(mark)
            self._note(
                f"model '{self.model}' is on a trial config left by an earlier tune ({mark}) that "
                "did not restore it: reloading it from the repository's files first"
            )
            self._call(lambda: self.repository.reload_from_files(self.model))
            config = self._read_config()
            if trial_mark_of(config) is not None:
                raise TuneError(
                    f"the repository's own config of '{self.model}' carries the tune's trial mark: "
                    "remove that parameter from its config.pbtxt"
                )
        # The same config with this tune's mark: it fails at once where load is not allowed (the
        # tune stops before measuring anything), and from now on a second tune is refused.
        current = settings_of(config)
        with self._lock:
            self._changed = True  # from the moment we ask: a load may succeed late
        self.original_config = config
        self._call(lambda: self.repository.load(self.model, apply_settings(config, current, self.mark)))
        self._check_still_ours()
        try:
            self.trials = trial_settings(
                current, self.plan.instances, self.plan.max_batches, self.plan.queue_delays
            )
            for settings in self.trials[1:]:
                apply_settings(config, settings)
        except ValueError as e:
            raise TuneError(f"model '{self.model}': {e}") from None
        return self.trials

    def total_requests(self) -> int:
        """The plan's requests, plus those the sweeps added so far (the total only grows)."""
        sweep = self._sweep
        added = self._added_before + (sweep.added_requests if sweep is not None else 0)
        return len(self.trials) * self.plan.sweep.total_requests() + added

    def run(self) -> TuneResult:
        """Every trial, then the analysis; the original config restored before returning (or
        raising). A cancelled tune returns what it measured, `interrupted` set."""
        self._t0 = time.monotonic()
        if self.original_config is None:
            self.prepare()
        assert self.original_config is not None
        result = TuneResult(
            model=self.model,
            endpoint=self.repository.endpoint,
            original_config=self.original_config,
            original_settings=self.trials[0],
            budget_ms=self.plan.latency_budget_ms,
        )
        try:
            for index, settings in enumerate(self.trials):
                if self.cancelled:
                    break
                trial = self._trial(index, settings)
                result.trials.append(trial)
                if self.on_trial is not None:
                    self.on_trial(trial)
        except BaseException:
            # The first error is the one to report; a failed restore is kept in restore_error.
            with contextlib.suppress(TuneError):
                self.restore()
            raise
        self.restore()
        result.interrupted = self.cancelled
        result.pareto = pareto_front(result.trials)
        result.recommendation, result.recommendation_reason = recommend(
            result.trials, self.plan.latency_budget_ms
        )
        result.seconds = time.monotonic() - self._t0
        result.notes = list(self.notes)
        return result

    def _refuse_if_owned(self, mark: str) -> None:
        """TuneError when the trial config on the server is another tune's that may still run:
        one running on this machine (its pid and start time match), or on another machine
        (where this one cannot look). An older mark, or a dead owner's, is left over."""
        owner = mark_owner(mark)
        if owner is None or mark == self.mark:
            return
        if owner.alive:
            raise TuneError(
                f"model '{self.model}' is being tuned on this server by another tune right now "
                f"({mark}, still running): one tune of a model per server at a time"
            )
        if not owner.here:
            raise TuneError(
                f"model '{self.model}' is on the trial config of a tune on {owner.host or 'another machine'} "
                f"({mark}), which this machine cannot tell is still running. If it is not: "
                f"`repository unload {self.model}` then `repository load {self.model}`, then tune again"
            )

    def _check_still_ours(self) -> None:
        """TuneError (and nothing restored: the config is not ours to restore) when another
        tune's config replaced this one's since it was loaded."""
        mark = trial_mark_of(self._read_config())
        if mark is not None and mark != self.mark:
            with self._lock:
                self._changed = False
            raise TuneError(
                f"another tune of '{self.model}' loaded its own config on this server ({mark}): "
                "this tune stops (one tune of a model per server at a time)"
            )

    def restore(self) -> None:
        """Load the original config back if a trial config is on. Idempotent; TuneError when
        the server refuses (the message says how to restore by hand)."""
        with self._lock:
            changed = self._changed
        if not changed or self.original_config is None:
            return
        with contextlib.suppress(TuneError):  # unreadable: restore all the same
            mark = trial_mark_of(self._read_config())
            if mark is not None and mark != self.mark:  # another tune's now: not ours to undo
                self._note(f"the config of '{self.model}' is another tune's now ({mark}): not restored")
                with self._lock:
                    self._changed = False
                return
        self._progress_phase(TunePhase.RESTORING)
        try:
            self.repository.load(self.model, self.original_config)
        except RepositoryError as e:
            self.restore_error = (
                f"could not restore the original config of '{self.model}': {e}. To go back to the "
                f"repository's files: `repository unload {self.model}` then `repository load {self.model}`"
            )
            raise TuneError(self.restore_error) from None
        with self._lock:
            self._changed = False
        self.restore_error = None

    def _trial(self, index: int, settings: TrialSettings) -> TrialResult:
        assert self.original_config is not None
        original = index == 0
        trial = TrialResult(settings, original)
        self._current = (index, settings)
        if not original:
            self._progress_phase(TunePhase.LOADING)
            self._check_still_ours()
            config = apply_settings(self.original_config, settings, self.mark)
            t0 = time.monotonic()
            with self._lock:
                self._changed = True  # from the moment we ask: a load may succeed late
            try:
                self.repository.load(self.model, config)
            except RepositoryError as e:
                if e.kind is not RepositoryErrorKind.LOAD_FAILED:
                    raise TuneError(str(e)) from None
                trial.error = str(e)
                self._note(f"{settings.describe()}: {e}")
                self._done_before += self.plan.sweep.total_requests()
                return trial
            trial.load_seconds = time.monotonic() - t0
        if self.cancelled:
            return trial
        sweep = self.new_sweep(self.model, self._sweep_progress)
        with self._lock:
            self._sweep = sweep
        started = time.time()
        try:
            trial.levels = sweep.run()
        except (SessionError, ProfileError) as e:
            trial.error = f"the sweep could not run: {e}"
            self._note(f"{settings.describe()}: {trial.error}")
        finally:
            # The trial's share, its added runs included: the count never goes back.
            with self._lock:
                self._added_before += sweep.added_requests
                self._sweep = None
            self._done_before += self.plan.sweep.total_requests() + sweep.added_requests
        if self.metrics is not None:
            trial.server_metrics = summary_of(self.metrics.between(started, time.time()))
        for note in sweep.notes + stage_notes(trial.levels):
            if NO_SUCCESS in note:  # a level's own: which trial's
                note = f"{settings.describe()}, {note}"
            if note not in self.notes:
                self._note(note)
        return trial

    # -- helpers ------------------------------------------------------------
    def _read_config(self) -> ModelConfigDict:
        config: ModelConfigDict = self._call(lambda: self.repository.config(self.model))
        return config

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except RepositoryError as e:
            raise TuneError(str(e)) from None

    def _progress_phase(self, phase: TunePhase, step: str = "", done_in_trial: int = 0) -> None:
        if self.on_progress is None or (self._current is None and phase is not TunePhase.RESTORING):
            return
        index, settings = self._current or (len(self.trials) - 1, self.trials[-1])
        self.on_progress(
            TuneProgress(
                trial=index + 1,
                trials=len(self.trials),
                settings=settings,
                phase=phase,
                step=step,
                done_requests=self._done_before + done_in_trial,
                total_requests=self.total_requests(),
                elapsed_s=time.monotonic() - self._t0,
            )
        )

    def _sweep_progress(self, p: SweepProgress) -> None:
        self._progress_phase(TunePhase.MEASURING, p.step, p.done_requests)
