"""The progressive load ramp: start at 1 request in flight, raise it, watch the curve, find
the knee (the level after which throughput hardly grows while latency keeps rising).

Used by `bench`, `tune` and by the viewer's Load test window. For each combination of
transport and client batch, one session; for each concurrency level, a LoadJob on the user's
own images, with the server's time split from its statistics over that level.

Noise (a shared machine, a server busy with others): each level's throughput is measured over
parts of its run (`LevelResult.spread`, ± of the median). A level whose parts differ by more
than NOISY_SPREAD is measured again, up to `SweepPlan.max_runs` times in all, its figures
pooled; still that spread, it is marked `noisy`. The knee and the recommendation compare levels
with a margin of their spread: a level is never taken as the knee (nor recommended) while a
later level's throughput is clearly above it.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.errors import ExtensionMissingError
from app.inference.introspection.server_stats import split, stages_note
from app.inference.transports.transport import TransportKind
from app.pipeline.load import LoadJob
from app.pipeline.load_figures import LoadFigures, figures_of
from app.resources import sample_image
from app.sources.files import expand_inputs
from app.sources.images import read_image

NO_SUCCESS = "no request succeeded, so no throughput (null)"  # a level's note
KNEE_GAIN = 0.05  # "throughput grows less than 5%"
NOISY_SPREAD = 0.15  # a level whose throughput varies by more than ±15% while it runs is noisy
MAX_MARGIN = 0.25  # however noisy, 25% more throughput at a later level is "clearly more"
MAX_RUNS = 3  # a noisy level is measured up to this many times, its runs pooled
MAX_IMAGES = 64  # decoded images kept for a sweep (they are sent in turn)


def load_sweep_images(paths: Sequence[str | Path]) -> tuple[list[np.ndarray], list[str]]:
    """Decoded images from files and folders (at most MAX_IMAGES) and their names; the bundled
    sample when no path is given. ValueError naming the input and the cause."""
    if not paths:
        return [read_image(sample_image())], [str(sample_image())]
    images, names = [], []
    for item in expand_inputs(paths):
        if item.kind == "failed":
            raise ValueError(item.error or f"{item.path}: unusable")
        if item.kind != "image":
            continue
        images.append(read_image(item.path))
        names.append(str(item.path))
        if len(images) >= MAX_IMAGES:
            break
    if not images:
        raise ValueError(f"no image found in {', '.join(map(str, paths))}")
    return images, names


@dataclass(frozen=True)
class SweepPlan:
    levels: tuple[int, ...]  # concurrency levels, ascending
    transports: tuple[TransportKind, ...] = (TransportKind.AUTO,)
    client_batches: tuple[int, ...] = (1,)
    requests: int = 200  # measured requests per level
    warmup: int | None = None  # per level; default max(10, 2 x level)
    max_runs: int = MAX_RUNS  # measured runs of a noisy level (1: never measured again)

    def steps(self) -> list[tuple[TransportKind, int, int]]:
        return [
            (t, b, c) for t, b in itertools.product(self.transports, self.client_batches) for c in self.levels
        ]

    def warmup_for(self, level: int) -> int:
        return self.warmup if self.warmup is not None else max(10, 2 * level)

    def total_requests(self) -> int:
        return sum(self.requests + self.warmup_for(c) for _, _, c in self.steps())


@dataclass(frozen=True)
class LevelResult:
    concurrency: int
    transport: str  # the transport used ("shm" or "grpc", also when "auto" was asked)
    client_batch: int  # requests per call actually used
    throughput: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    failed: int
    server_queue_ms: float | None
    server_compute_ms: float | None
    first_error: str | None = None
    # The server's batcher over the level: images per model execution, executions per second.
    server_avg_batch: float | None = None
    server_executions_per_s: float | None = None
    # How much the throughput varied while the level ran: the half-range of its parts' rates
    # over their median (0.1 = ±10%); None when too few requests ended to tell.
    spread: float | None = None
    runs: int = 1  # measured runs pooled into these figures (more when the first was noisy)
    noisy: bool = False  # the spread stayed above NOISY_SPREAD however many runs
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the plain loop's figures
    # A pipeline's stages over the level: {"STAGE": {"count", "queue_ms", "compute_ms"}}.
    models: dict[str, dict[str, float | int]] | None = None
    succeeded: int | None = None  # requests that succeeded (None: not counted)

    @property
    def no_success(self) -> bool:
        """No request of the level succeeded: it has no throughput (null in its record)."""
        return self.succeeded == 0

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        extra = record.pop("extra")
        record.update(extra)
        if record["models"] is None:  # a single model: no key, as in infer's summary
            del record["models"]
        if self.no_success:
            record["throughput"] = None
        return record


def spread_of(rates: Sequence[float]) -> float | None:
    """Half the range of `rates` over their median (0.1 = ±10%); with six or more, the
    highest and the lowest are left out (one stall does not make a level noisy)."""
    values = sorted(r for r in rates if r > 0)
    if len(values) < 2:
        return None
    if len(values) >= 6:
        values = values[1:-1]
    middle = float(np.median(values))
    return round((values[-1] - values[0]) / (2 * middle), 4) if middle > 0 else None


def margin(a: LevelResult, b: LevelResult) -> float:
    """How much more throughput `b` needs to be clearly above `a`: 5%, or their spread when
    larger (at most MAX_MARGIN)."""
    spreads = [s for s in (a.spread, b.spread) if s is not None]
    return min(max([KNEE_GAIN, *spreads]), max(MAX_MARGIN, KNEE_GAIN))


def clearly_above(b: LevelResult, a: LevelResult) -> bool:
    """`b`'s throughput is above `a`'s by more than the noise of either."""
    return b.throughput > a.throughput * (1 + margin(a, b))


def find_knee(results: Sequence[LevelResult]) -> LevelResult | None:
    """In one series (ascending concurrency): the first level that no later level clearly beats
    on throughput (more than 5%, or than their spread), while p95 rises after it. None when
    throughput still grows clearly at the last level (or latency never rises)."""
    for i, here in enumerate(results[:-1]):
        if here.p95_ms is None:
            continue
        later = results[i + 1 :]
        if any(clearly_above(other, here) for other in later):
            continue
        if any(other.p95_ms is not None and other.p95_ms > here.p95_ms for other in later):
            return here
    return None


def series(results: Sequence[LevelResult]) -> dict[tuple[str, int], list[LevelResult]]:
    out: dict[tuple[str, int], list[LevelResult]] = {}
    for r in results:
        out.setdefault((r.transport, r.client_batch), []).append(r)
    for levels in out.values():
        levels.sort(key=lambda r: r.concurrency)
    return out


def recommend(results: Sequence[LevelResult]) -> tuple[LevelResult | None, str]:
    """The setting to use (each series' knee, or its best level when it has none; the best of
    those) and one sentence saying why (and how noisy the measurements were)."""
    best: LevelResult | None = None
    best_series: list[LevelResult] = []
    knee_found = False
    for levels in series(results).values():
        knee = find_knee(levels)
        pick = knee or max(levels, key=lambda r: r.throughput)
        if best is None or pick.throughput > best.throughput:
            best, best_series, knee_found = pick, levels, knee is not None
    if best is None:
        return None, "no level was measured"
    where = f"{best.concurrency} in flight, transport {best.transport}, client batch {best.client_batch}"
    figures = f"{best.throughput:.0f} req/s, p95 {best.p95_ms or 0:.1f} ms"
    if knee_found:
        sentence = f"use {where} ({figures}): beyond it latency rises while throughput hardly grows"
    else:
        sentence = f"use {where} ({figures}); throughput still grew at the highest level: try higher ones"
    return best, sentence + noise_note(best_series)


def noise_note(levels: Sequence[LevelResult]) -> str:
    """ "" when the series was steady; else what was noisy and by how much."""
    noisy = [lv for lv in levels if lv.noisy]
    if not noisy:
        return ""
    worst = max(noisy, key=lambda lv: lv.spread or 0.0)
    at = ", ".join(str(lv.concurrency) for lv in noisy)
    return (
        f". The measurements were noisy: throughput varied by up to ±{(worst.spread or 0) * 100:.0f}% "
        f"within a level (at {at} in flight, measured {worst.runs} times); levels within that of "
        "each other are alike: run again on a quieter machine or with more requests"
    )


def pooled(runs: Sequence[tuple[LoadFigures, Sequence[float]]]) -> LoadFigures:
    """Runs of one level as one measurement: every request, every second, every latency."""
    if len(runs) == 1:
        return runs[0][0]
    all_figures = [figures for figures, _ in runs]
    return figures_of(
        [latency for _, latencies in runs for latency in latencies],
        sum(f.requests for f in all_figures),
        sum(f.failed for f in all_figures),
        sum(f.seconds for f in all_figures),
        next((f.first_error for f in all_figures if f.first_error), None),
        [rate for f in all_figures for rate in f.rates],
    )


@dataclass(frozen=True)
class SweepProgress:
    done_requests: int
    total_requests: int
    elapsed_s: float
    step: str  # e.g. "shm, batch 1, 8 in flight"

    @property
    def eta_s(self) -> float | None:
        if self.done_requests <= 0:
            return None
        return self.elapsed_s / self.done_requests * (self.total_requests - self.done_requests)


class Sweep:
    """`run()` blocks (a thread of its own in the viewer); `cancel()` from any thread.
    `on_level(result)` after each level, `on_progress(progress)` a few times a second at most.

    Each transport and client batch of the plan gets a session opened as `spec` says (its
    servers, model, profile, TLS, timeout, batch delay) with that transport and batch."""

    def __init__(
        self,
        spec: SessionSpec,
        images: Sequence[np.ndarray],
        plan: SweepPlan,
        *,
        on_level: Callable[[LevelResult], None] | None = None,
        on_progress: Callable[[SweepProgress], None] | None = None,
        extra_for_level: Callable[[TritonSession, int], dict[str, Any]] | None = None,
        on_session: Callable[[TritonSession], None] | None = None,
        on_session_end: Callable[[TritonSession], None] | None = None,
    ) -> None:
        if not images:
            raise ValueError("a sweep needs at least one image")
        self.spec = spec
        self.images = list(images)
        self.plan = plan
        self.on_level = on_level
        self.on_progress = on_progress
        self.extra_for_level = extra_for_level  # e.g. run the plain loop at this level
        # Each step's session once open, and before it closes (bench --trace traces them).
        self.on_session, self.on_session_end = on_session, on_session_end
        self.results: list[LevelResult] = []
        self.model_name: str | None = None
        self.notes: list[str] = []
        self._cancelled = threading.Event()
        self._job: LoadJob | None = None
        self._done_before = 0  # requests ended in the levels already run (the current job counts its own)
        self._added_requests = 0  # runs added to noisy levels (beyond the plan's)
        self._t0 = 0.0
        self._last_progress = 0.0
        self._lock = threading.Lock()  # one progress report at a time (results end on several threads)

    def cancel(self) -> None:
        self._cancelled.set()
        job = self._job
        if job is not None:
            job.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def added_requests(self) -> int:
        """Requests added to the plan's so far: the runs that measured a noisy level again."""
        return self._added_requests

    def run(self) -> list[LevelResult]:
        self._t0 = time.monotonic()
        for transport, batch in itertools.product(self.plan.transports, self.plan.client_batches):
            if self.cancelled:
                break
            session = open_session(self.step_spec(transport, batch))
            try:
                if self.on_session is not None:
                    self.on_session(session)
                self.model_name = session.info.name if session.info else self.spec.model
                # Why the transport differs, what the server lacks of Triton's extensions: once each.
                for note in (session.transport_note, *session.notes):
                    if note and note not in self.notes:
                        self.notes.append(note)
                for level in self.plan.levels:
                    if self.cancelled:
                        break
                    self._level(session, level)
                if self.on_session_end is not None:
                    self.on_session_end(session)
            finally:
                session.close()
        return self.results

    def step_spec(self, transport: TransportKind, batch: int) -> SessionSpec:
        spec = self.spec
        return dataclasses.replace(
            spec,
            delivery=dataclasses.replace(spec.delivery, transport=transport, client_batch=batch),
            # The sweep's own thread feeds (one thread hop less); its top level fits the window.
            limits=dataclasses.replace(spec.limits, max_in_flight=max(self.plan.levels), send_in_caller=True),
        )

    def _level(self, session: TritonSession, level: int) -> None:
        assert session.transport is not None
        step = f"{session.transport.kind.value}, batch {session.batching}, {level} in flight"
        warmup = self.plan.warmup_for(level)
        if warmup:
            self._run_job(session, warmup, level, step)
        try:
            before = session.read_server_counters()
        except ExtensionMissingError as e:  # not Triton: said once, the levels go on without
            before = None
            if str(e) not in self.notes:
                self.notes.append(str(e))
        except Exception:
            before = None
        runs: list[tuple[LoadFigures, list[float]]] = []
        while True:
            run = self._run_job(session, self.plan.requests, level, step)
            if run is None or self.cancelled:
                return
            runs.append(run)
            spread = spread_of([rate for figures, _ in runs for rate in figures.rates])
            noisy = spread is not None and spread > NOISY_SPREAD
            if not noisy or len(runs) >= self.plan.max_runs:
                break
            # Noisy: measure the level again (the progress total grows by one run).
            self._added_requests += self.plan.requests
        figures = pooled(runs)
        server = None
        if before is not None:
            try:
                server = split(before, session.read_server_counters(), figures.seconds)
            except Exception:
                server = None
        extra = self.extra_for_level(session, level) if self.extra_for_level is not None else {}
        result = LevelResult(
            concurrency=level,
            transport=session.transport.kind.value,
            client_batch=session.batching,
            throughput=figures.throughput,
            succeeded=figures.ok,
            p50_ms=figures.p50_ms,
            p95_ms=figures.p95_ms,
            p99_ms=figures.p99_ms,
            failed=figures.failed,
            server_queue_ms=None if server is None else round(server.queue_ms, 3),
            server_compute_ms=None if server is None else round(server.compute_ms, 3),
            first_error=figures.first_error,
            server_avg_batch=None if server is None else round(server.batch_size, 3),
            server_executions_per_s=None
            if server is None or server.executions_per_s is None
            else round(server.executions_per_s, 2),
            spread=spread,
            runs=len(runs),
            noisy=noisy,
            extra=extra,
            models=None if server is None else server.models_record(),
        )
        self.results.append(result)
        if result.no_success:
            self.notes.append(
                f"{step}: {NO_SUCCESS}; the first error: {result.first_error or 'none recorded'}"
            )
        if self.on_level is not None:
            self.on_level(result)

    def _run_job(
        self, session: TritonSession, requests: int, level: int, step: str
    ) -> tuple[LoadFigures, list[float]] | None:
        """One run: its figures and its successful requests' latencies (None: cancelled)."""
        if self.cancelled:
            return None
        job = self._job = LoadJob(session, self.images, requests, level, lambda _ok: self._tick(job, step))
        try:
            return job.run(), job.latencies()
        finally:
            self._job = None
            self._done_before += job.group.counts.ended

    def _tick(self, job: LoadJob, step: str) -> None:
        now = time.monotonic()
        with self._lock:
            if self.on_progress is None or now - self._last_progress < 0.2:
                return
            self._last_progress = now
            # The result being handed on is counted already (a group counts before handing on).
            done = self._done_before + job.group.counts.ended
            total = self.plan.total_requests() + self._added_requests
            progress = SweepProgress(done, total, now - self._t0, step)
        self.on_progress(progress)


def stage_notes(results: Sequence[LevelResult]) -> list[str]:
    """One note naming a pipeline's stages when the levels have their figures, else none."""
    names = list(dict.fromkeys(name for r in results for name in (r.models or {})))
    return [stages_note(names)] if names else []
