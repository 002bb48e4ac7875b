"""`python -m app tune --model NAME ...`: the server-config search (app.pipeline.tune) from the
command line: the plan, progress with time left on stderr, the table and the recommendation
on stdout, JSON/CSV/config.pbtxt files on request.

The tune runs in a worker thread while the main thread waits: Ctrl-C, SIGTERM and SIGHUP
arrive in the main thread, which cancels the tune and keeps waiting while the worker loads
the original config back, so a signal never cuts the restore short (a third one leaves).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from app.commands.bench import load_images, parse_batches, parse_levels, parse_transports, stages_text
from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_profile_arguments,
    eprint,
    path_argument,
    serving,
    session_spec,
)
from app.commands.outputs import check_file_output, check_folder_output, write_output
from app.commands.progress import RequestsLine, format_seconds
from app.inference.core.spec import Delivery
from app.inference.errors import SessionError
from app.inference.introspection.metrics_history import MetricsHistory, MetricsPoller
from app.inference.introspection.repository import RepositoryControl
from app.inference.introspection.server_metrics import MetricsReader, default_metrics_url
from app.inference.model_files.reading import is_model_file_name
from app.inference.profiles.profile import ProfileError
from app.pipeline.sweep import LevelResult, Sweep, SweepPlan, SweepProgress
from app.pipeline.tune import TuneError, TunePhase, TunePlan, TuneProgress, Tuner, TuneResult
from app.pipeline.tune_export import write_csv, write_json, write_model_config
from app.pipeline.tune_settings import parse_delay_list, parse_int_list
from app.system.atomic_files import describe_write_error

T = TypeVar("T")
DEFAULT_LEVELS = "1,4,16"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p, repeatable_url=False)
    p.add_argument("--model", required=True, metavar="NAME", help="the model to tune")
    add_profile_arguments(p)
    p.add_argument(
        "--image",
        type=path_argument,
        action="append",
        default=[],
        metavar="PATH",
        help="image file or folder to send (repeatable; default: the bundled astronaut)",
    )
    p.add_argument(
        "--instances",
        default=None,
        metavar="LIST",
        help="instance counts to try, e.g. 1,2,4 (default: the current count and twice it)",
    )
    p.add_argument(
        "--max-batch",
        default=None,
        metavar="LIST",
        help="max_batch_size values to try (default: the current one)",
    )
    p.add_argument(
        "--queue-delay-us",
        default=None,
        metavar="LIST",
        help="dynamic batching to try: 'off' (none) or a max queue delay in microseconds, e.g. "
        "off,0,2000 (default: off, 0 and the current delay or 2000; off only for a model "
        "without a batch dimension)",
    )
    p.add_argument(
        "--concurrency",
        default=DEFAULT_LEVELS,
        metavar="LEVELS",
        help=f"in-flight levels swept on every trial (default {DEFAULT_LEVELS})",
    )
    p.add_argument("--requests", type=int, default=200, metavar="N", help="measured requests per level")
    p.add_argument(
        "--warmup", type=int, default=None, metavar="N", help="warm-up requests (default 2x level, >= 10)"
    )
    p.add_argument("--transport", default="auto", metavar="LIST", help="auto, grpc, shm (comma-separated)")
    p.add_argument("--client-batch", default="1", metavar="LIST", help="client batch sizes (default 1: off)")
    p.add_argument(
        "--batch-delay-ms", type=float, default=2.0, metavar="T", help="client batch timer (default 2)"
    )
    p.add_argument(
        "--latency-budget-ms",
        type=float,
        default=None,
        metavar="MS",
        help="recommend the highest throughput whose p95 is within MS (default: the knee)",
    )
    p.add_argument(
        "--metrics-url",
        default=None,
        metavar="HOST:PORT",
        help="the server's Prometheus metrics, read during each trial (CPU utilisation, pending "
        "requests; GPU figures when reported). Default: the embedded server's, or the --url host "
        "on port 8002",
    )
    p.add_argument(
        "--output", type=path_argument, default=None, metavar="FILE.json", help="write the results as JSON"
    )
    p.add_argument(
        "--csv", type=path_argument, default=None, metavar="FILE", help="write every trial's levels as CSV"
    )
    p.add_argument(
        "--write-config",
        type=path_argument,
        default=None,
        metavar="DIR",
        help="write DIR/NAME/config.pbtxt: the original config with the recommended settings",
    )
    p.epilog = (
        "Every trial loads the model with a config override (nothing is written on the server);\n"
        "the model's original config is measured first and loaded back at the end, after Ctrl-C\n"
        "and after an error. Needs a server in explicit model-control mode (the embedded one is)."
    )


def _plan(args: argparse.Namespace) -> TunePlan:
    if args.requests < 1:
        raise UsageError("--requests must be >= 1")
    if args.latency_budget_ms is not None and not args.latency_budget_ms > 0:
        raise UsageError("--latency-budget-ms must be a positive number of milliseconds")
    try:
        instances = parse_int_list(args.instances, "--instances", 1, 64) if args.instances else None
        batches = parse_int_list(args.max_batch, "--max-batch", 0, 4096) if args.max_batch else None
        delays = parse_delay_list(args.queue_delay_us) if args.queue_delay_us else None
    except ValueError as e:
        raise UsageError(str(e)) from None
    sweep = SweepPlan(
        levels=tuple(parse_levels(args.concurrency)),
        transports=tuple(parse_transports(args.transport)),
        client_batches=tuple(parse_batches(args.client_batch)),
        requests=args.requests,
        warmup=args.warmup,
    )
    return TunePlan(
        sweep=sweep,
        instances=None if instances is None else tuple(instances),
        max_batches=None if batches is None else tuple(batches),
        queue_delays=None if delays is None else tuple(delays),
        latency_budget_ms=args.latency_budget_ms,
    )


@contextlib.contextmanager
def _connect(
    args: argparse.Namespace, plan: SweepPlan
) -> Iterator[tuple[RepositoryControl, Callable[..., Sweep], str | None]]:
    """The server (repository control), how each trial's sweep connects, and the server's
    metrics address: the one place that reads the connection and session options."""
    images, _names = load_images(args.image)
    with (
        serving(session_spec(args, delivery=Delivery(batch_delay_ms=args.batch_delay_ms))) as spec,
        RepositoryControl(spec.endpoints[0], spec.connection, timeout_s=args.timeout) as repository,
    ):
        metrics = args.metrics_url or spec.metrics_url or default_metrics_url(spec.endpoints[0])

        def new_sweep(model: str, on_progress: Callable[[SweepProgress], None]) -> Sweep:
            trial = dataclasses.replace(spec, endpoints=spec.endpoints[:1], model=model)
            return Sweep(trial, images, plan, on_progress=on_progress)

        yield repository, new_sweep, metrics


class ProgressPrinter:
    """Throttled stderr lines: `\\r` updates on a terminal, one line every few seconds otherwise."""

    def __init__(self) -> None:
        self.tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.interval = 0.2 if self.tty else 3.0
        self._last = 0.0
        self._phase: TunePhase | None = None
        self._requests = RequestsLine()  # never backwards; a grown total said as such

    def __call__(self, p: TuneProgress) -> None:
        now = time.monotonic()
        if p.phase == self._phase and now - self._last < self.interval:
            return
        self._last, self._phase = now, p.phase
        percent = self._requests.percent(p.done_requests, p.total_requests)
        left = "" if p.eta_s is None else f", {format_seconds(p.eta_s)} left"
        what = (
            f"{p.step}: {self._requests.requests(p.done_requests, p.total_requests)}"
            if p.phase is TunePhase.MEASURING
            else f"{p.phase} the config"
        )
        line = f"[{percent:3.0f}%] trial {p.trial}/{p.trials} ({p.settings.describe()}): {what}{left}"
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(("\r\x1b[K" + line) if self.tty else line + "\n")
            sys.stderr.flush()

    def end_line(self) -> None:
        if self.tty:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\n")


def _in_worker(fn: Callable[[], T], tuner: Tuner) -> tuple[T | None, bool]:
    """Run `fn` in a worker thread; signals (KeyboardInterrupt here) cancel the tune and the
    wait goes on until the worker has restored the config. (result, interrupted); the
    worker's exception is raised here."""
    box: dict[str, Any] = {}
    # An Event, not Thread.join: a KeyboardInterrupt inside join() can leave the Thread
    # object reporting "not alive" while the thread still runs (CPython 3.11).
    finished = threading.Event()

    def work() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # handed to the main thread
            box["error"] = e
        finally:
            finished.set()

    # Daemon: a third signal leaves without waiting for it (the config then stays as it is).
    worker = threading.Thread(target=work, name="tune", daemon=True)
    worker.start()
    signals = 0
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:
            signals += 1
            if signals == 1:
                eprint(f"\ninterrupted: stopping; the original config of '{tuner.model}' is being restored")
                tuner.cancel()
            elif signals == 2:
                eprint("still restoring the original config: interrupt once more to leave it as it is")
            else:
                raise
    if "error" in box:
        raise box["error"]
    return box.get("result"), signals > 0


def _server_line(figures: dict[str, float | None] | None) -> list[str]:
    cpu = (figures or {}).get("cpu_utilization_mean")
    if figures is None or cpu is None:
        return []
    pending = figures.get("pending_requests_max") or 0.0
    return [f"{'':>5} server while measuring: CPU {cpu:.0%} on average, at most {pending:.0f} pending"]


def format_report(result: TuneResult, images: int, requests: int) -> str:
    rec = result.recommendation
    front = {id(p.level) for p in result.pareto}
    chosen = id(rec.level) if rec is not None else None
    rows = [
        f"model {result.model} at {result.url}, {images} image(s), {requests} requests per level",
        f"original config: {result.original_settings.describe()}",
        "",
        f"{'trial':>5} {'inst':>4} {'max batch':>9} {'delay us':>8} {'in flight':>9} {'transport':>9} "
        f"{'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'srv queue':>9} {'srv comp':>8} "
        f"{'avg batch':>9} {'failed':>6}",
    ]

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    def throughput(lv: LevelResult) -> str:
        return "-" if lv.no_success else f"{lv.throughput:.1f}"  # none succeeded: none measured

    for n, trial in enumerate(result.trials, 1):
        s = trial.settings
        label = f"{n}{'*' if trial.original else ''}"
        delay = "off" if s.max_queue_delay_us is None else str(s.max_queue_delay_us)
        head = f"{label:>5} {s.instances:>4} {s.max_batch_size:>9} {delay:>8}"
        if trial.error is not None:
            rows.append(f"{head}  failed: {trial.error}")
            continue
        if not trial.levels:
            rows.append(f"{head}  (interrupted before a level was measured)")
        for lv in trial.levels:
            marks = (" P" if id(lv) in front else "") + ("  <- recommended" if id(lv) == chosen else "")
            rows.append(
                f"{head} {lv.concurrency:>9} {lv.transport:>9} {throughput(lv):>8} {ms(lv.p50_ms):>8} "
                f"{ms(lv.p95_ms):>8} {ms(lv.p99_ms):>8} {ms(lv.server_queue_ms):>9} "
                f"{ms(lv.server_compute_ms):>8} {ms(lv.server_avg_batch):>9} {lv.failed:>6}{marks}"
            )
            if lv.models:
                rows.append(f"{'':>5} {stages_text(lv.models)}")
        rows += _server_line(trial.server_metrics)
    rows += ["", "* the original config; P on the Pareto front (throughput against p95)"]
    if rec is None:
        rows.append(f"recommendation: none ({result.recommendation_reason})")
    else:
        lv = rec.level
        rows.append(
            f"recommendation: {rec.settings.describe()}, {lv.concurrency} in flight: "
            f"{lv.throughput:.1f} req/s, p95 {ms(lv.p95_ms)} ms ({rec.reason})"
        )
        if rec.original_level is not None and rec.speedup is not None:
            o = rec.original_level
            rows.append(
                f"speedup: {rec.speedup:.2f}x the original config at the same load "
                f"({o.throughput:.1f} req/s, p95 {ms(o.p95_ms)} ms)"
            )
    return "\n".join(rows) + "\n"


def run(args: argparse.Namespace) -> int:
    tuner: Tuner | None = None
    try:
        if is_model_file_name(args.model):
            # Each trial reloads the model with another config: an uploaded model has no
            # folder on the server to reload from.
            raise UsageError(
                f"--model {args.model}: tune reloads a model from the server's repository; write a "
                "model folder with `repository save FILE --to DIR`, serve DIR, and tune that model"
            )
        plan = _plan(args)
        # Checked before the first trial: a tune takes minutes.
        check_file_output("--output", args.output)
        check_file_output("--csv", args.csv)
        check_folder_output("--write-config", args.write_config)
        history = MetricsHistory()
        with (
            _connect(args, plan.sweep) as (repository, new_sweep, metrics_url),
            # No page to read when the server names no single host (give --metrics-url).
            MetricsPoller(MetricsReader(metrics_url), history) if metrics_url else contextlib.nullcontext(),
        ):
            printer = ProgressPrinter()
            tuner = Tuner(
                repository,
                args.model,
                plan,
                new_sweep,
                on_progress=printer,
                on_note=lambda text: eprint(f"\nnote: {text}" if printer.tty else f"note: {text}"),
                metrics=history,
            )
            trials, interrupted = _in_worker(tuner.prepare, tuner)
            if interrupted or trials is None:
                eprint("interrupted")
                return EXIT_INTERRUPTED
            eprint(
                f"tune of '{args.model}' at {repository.url}: {len(trials)} trial(s) x "
                f"{len(plan.sweep.steps())} level(s), {tuner.total_requests()} requests"
            )
            for n, settings in enumerate(trials, 1):
                eprint(f"  trial {n}: {settings.describe()}{' (the original config)' if n == 1 else ''}")
            result, interrupted = _in_worker(tuner.run, tuner)
            printer.end_line()
            latest = history.latest()
            if latest is not None and not latest.reachable:
                eprint(f"note: server metrics {latest.state}")
    except TuneError as e:
        eprint(f"error: {e}")
        if tuner is not None and tuner.restore_error:
            eprint(f"error: {tuner.restore_error}")
        return EXIT_USAGE
    except (UsageError, SessionError, ProfileError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:  # the third signal: the config may be left as a trial's
        eprint("interrupted: the model may be left on a trial config (a later tune restores it)")
        return EXIT_INTERRUPTED
    assert result is not None
    return _report(args, result, interrupted)


def _report(args: argparse.Namespace, result: TuneResult, interrupted: bool) -> int:
    print(format_report(result, max(1, len(args.image)), args.requests), end="", flush=True)
    eprint(
        f"tune took {format_seconds(result.seconds)}; the original config of '{result.model}' "
        f"{'was restored' if result.restored else 'was NOT restored'}"
    )
    status = EXIT_OK
    for option, path, write in (("--output", args.output, write_json), ("--csv", args.csv, write_csv)):
        if path and not write_output(option, path, functools.partial(write, path, result)):
            status = EXIT_FAILED
    if args.write_config:
        if interrupted:
            eprint("note: interrupted: no config written (the recommendation is from part of the trials)")
        else:
            try:
                path = write_model_config(args.write_config, result)
                eprint(f"recommended config written to {path}")
            except ValueError as e:
                eprint(f"note: {e}")
            except OSError as e:
                eprint(f"error: --write-config {describe_write_error(e.filename or args.write_config, e)}")
                status = EXIT_FAILED
    if interrupted:
        return EXIT_INTERRUPTED
    if status != EXIT_OK:
        return status
    failed = [t for t in result.trials if t.error is not None or any(lv.failed for lv in t.levels)]
    for trial in failed:
        detail = trial.error or next(lv.first_error for lv in trial.levels if lv.failed)
        eprint(f"failed: {trial.settings.describe()}: {detail}")
    return EXIT_FAILED if failed else EXIT_OK
