"""`python -m app bench`: the load sweep (the progressive ramp) on your own images.

For each transport and client batch asked for, and each concurrency level: warm-up, then N
requests through the app's whole pipeline (app.pipeline.sweep), with throughput, latency
p50/p95/p99 and the server's queue and compute time per request. The knee is marked and one
line recommends a setting. `--compare-plain` also runs a plain tritonclient async loop at
each level (app.pipeline.plain_loops: the same pre-processed tensors, a semaphore of `level`
slots) and prints the app/plain throughput ratio.
"""

from __future__ import annotations

import argparse
import csv
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_model_arguments,
    add_threshold_arguments,
    eprint,
    path_argument,
    serving,
    session_spec,
)
from app.commands.inputs import require_inputs
from app.commands.outputs import check_file_output, write_output
from app.commands.progress import RequestsLine
from app.commands.trace_output import TraceRun, add_trace_arguments
from app.inference.core.spec import Delivery
from app.inference.errors import SessionError
from app.inference.profiles.profile import ProfileError
from app.inference.redaction import url_without_password
from app.inference.result import strict_json
from app.inference.transports.transport import TransportKind
from app.pipeline.plain_comparison import PlainComparison
from app.pipeline.sweep import (
    MAX_RUNS,
    NOISY_SPREAD,
    LevelResult,
    Sweep,
    SweepPlan,
    SweepProgress,
    find_knee,
    load_sweep_images,
    recommend,
    series,
    stage_notes,
)
from app.system.atomic_files import replacing, write_whole

CSV_COLUMNS = (
    "concurrency",
    "transport",
    "client_batch",
    "throughput",
    "spread",
    "runs",
    "noisy",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "server_queue_ms",
    "server_compute_ms",
    "server_avg_batch",
    "server_executions_per_s",
    "failed",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p, repeatable_url=False)
    add_model_arguments(p)
    add_threshold_arguments(p)
    add_trace_arguments(p, path_argument)
    p.add_argument(
        "--concurrency",
        default="1,2,4,8,16",
        metavar="LEVELS",
        help="comma-separated in-flight levels, ascending (default 1,2,4,8,16)",
    )
    p.add_argument(
        "--transport",
        default="auto",
        metavar="LIST",
        help="transports to sweep, comma-separated: auto, grpc, shm (default auto)",
    )
    p.add_argument(
        "--client-batch",
        default="1",
        metavar="LIST",
        help="client batch sizes to sweep, comma-separated (default 1: off)",
    )
    p.add_argument(
        "--batch-delay-ms", type=float, default=2.0, metavar="T", help="client batch timer (default 2)"
    )
    p.add_argument("--requests", type=int, default=200, metavar="N", help="measured requests per level")
    p.add_argument(
        "--warmup", type=int, default=None, metavar="N", help="warm-up requests (default 2x level, >= 10)"
    )
    p.add_argument(
        "--max-runs",
        type=int,
        default=MAX_RUNS,
        metavar="N",
        help=f"measure a noisy level (throughput varying by more than ±{NOISY_SPREAD * 100:.0f}%%) up to "
        f"N times in all, pooling the runs (default {MAX_RUNS}; 1: never again)",
    )
    p.add_argument(
        "--image",
        type=path_argument,
        action="append",
        default=[],
        metavar="PATH",
        help="image file or folder to send (repeatable; default: the bundled astronaut)",
    )
    p.add_argument(
        "--output",
        type=path_argument,
        default=None,
        metavar="FILE.json",
        help="also write the figures as JSON",
    )
    p.add_argument(
        "--csv", type=path_argument, default=None, metavar="FILE", help="also write the levels as CSV"
    )
    p.add_argument(
        "--compare-plain",
        action="store_true",
        help="also run a plain tritonclient async loop at each level and print app/plain",
    )


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(
            f"--concurrency expects comma-separated integers, e.g. 1,2,4; got {text!r}"
        ) from None
    if not levels or min(levels) < 1:
        raise UsageError(f"--concurrency levels must be >= 1; got {text!r}")
    if max(levels) > 1024:
        raise UsageError(f"--concurrency levels must be <= 1024; got {text!r}")
    return sorted(set(levels))


def parse_transports(text: str) -> list[TransportKind]:
    try:
        kinds = [TransportKind(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--transport expects auto, grpc or shm (comma-separated); got {text!r}") from None
    if not kinds:
        raise UsageError("--transport needs at least one transport")
    return list(dict.fromkeys(kinds))


def parse_batches(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--client-batch expects comma-separated integers; got {text!r}") from None
    if not sizes or min(sizes) < 1 or max(sizes) > 256:
        raise UsageError(f"--client-batch sizes must be within 1..256; got {text!r}")
    return list(dict.fromkeys(sizes))


def load_images(paths: Sequence[str]) -> tuple[list[np.ndarray], list[str]]:
    """--image's pictures (bench, tune); a missing path refused as every command does."""
    require_inputs(paths, "--image")
    try:
        return load_sweep_images(paths)
    except ValueError as e:
        raise UsageError(f"--image: {e}") from None


def progress_printer() -> Any:
    line = RequestsLine()  # never backwards; a grown total said as such

    def show(p: SweepProgress) -> None:
        eta = "" if p.eta_s is None else f", {p.eta_s:.0f} s left"
        percent = line.percent(p.done_requests, p.total_requests)
        eprint(f"[{percent:3.0f}%] {p.step}: {line.requests(p.done_requests, p.total_requests)}{eta}")

    return show


def stages_text(models: dict[str, dict[str, Any]]) -> str:
    """e.g. "stages per request: face_detector queue 0.05 + compute 8.10 ms (200 calls), ..."."""
    parts = [
        f"{name} queue {m['queue_ms']:.2f} + compute {m['compute_ms']:.2f} ms ({m['count']} calls)"
        for name, m in models.items()
    ]
    return "stages per request: " + ", ".join(parts)


def format_table(report: dict[str, Any]) -> str:
    rows = [
        f"model {report.get('model')} at {report['url']}, {len(report['images'])} image(s), "
        f"{report['requests']} requests per level",
        "",
        f"{'in flight':>9} {'transport':>9} {'batch':>5} {'req/s':>9} {'±%':>5} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8} {'srv queue':>9} {'srv comp':>9} {'avg batch':>9} {'exec/s':>8} {'failed':>6}",
    ]
    knees = {(k["transport"], k["client_batch"], k["concurrency"]) for k in report.get("knees", [])}

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for e in report["levels"]:
        mark = "  <- knee" if (e["transport"], e["client_batch"], e["concurrency"]) in knees else ""
        if e.get("noisy"):
            mark += f"  noisy ({e['runs']} runs)"
        ratio = (
            f"  (plain {e['plain_throughput']:.1f} req/s, app/plain {e['ratio']:.3f})" if "ratio" in e else ""
        )
        rows.append(
            f"{e['concurrency']:>9} {e['transport']:>9} {e['client_batch']:>5} {_rate(e['throughput']):>9} "
            f"{_spread(e.get('spread')):>5} {ms(e['p50_ms']):>8} {ms(e['p95_ms']):>8} {ms(e['p99_ms']):>8} "
            f"{ms(e['server_queue_ms']):>9} {ms(e['server_compute_ms']):>9} {ms(e['server_avg_batch']):>9} "
            f"{_rate(e['server_executions_per_s']):>8} {e['failed']:>6}{mark}{ratio}"
        )
        if e.get("models"):
            rows.append(f"{'':>9} {stages_text(e['models'])}")
    rows += ["", f"recommendation: {report['recommendation']}"]
    return "\n".join(rows) + "\n"


def _spread(value: float | None) -> str:
    """The level's throughput spread as a percentage ("-": too few requests to tell)."""
    return "-" if value is None else f"{value * 100:.0f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def build_report(sweep: Sweep, url: str, names: list[str], plan: SweepPlan) -> dict[str, Any]:
    levels = []
    for r in sweep.results:
        record = r.to_record()
        if record.get("plain_throughput") and record["throughput"] is not None:
            record["ratio"] = round(r.throughput / record["plain_throughput"], 3)
        levels.append(record)
    knees = [k.to_record() for k in (find_knee(s) for s in series(sweep.results).values()) if k is not None]
    best, sentence = recommend(sweep.results)
    return {
        "url": url_without_password(url),
        "model": sweep.model_name,
        "images": names,
        "requests": plan.requests,
        "levels": levels,
        "knee": knees[0]
        if len(knees) == 1
        else (max(knees, key=lambda k: k["throughput"] or 0.0) if knees else None),
        "knees": knees,
        "recommendation": sentence,
        "recommended": None if best is None else best.to_record(),
        "notes": sweep.notes + stage_notes(sweep.results),
    }


def write_csv(path: str, results: list[LevelResult]) -> None:
    with replacing(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in results:
            record = r.to_record()
            writer.writerow(["" if record.get(c) is None else record.get(c) for c in CSV_COLUMNS])


def run(args: argparse.Namespace) -> int:
    try:
        if args.requests < 1:
            raise UsageError("--requests must be >= 1")
        if args.max_runs < 1:
            raise UsageError("--max-runs must be >= 1")
        plan = SweepPlan(
            levels=tuple(parse_levels(args.concurrency)),
            transports=tuple(parse_transports(args.transport)),
            client_batches=tuple(parse_batches(args.client_batch)),
            requests=args.requests,
            warmup=args.warmup,
            max_runs=args.max_runs,
        )
        # Each step of the sweep sets its transport and client batch; the delay is common.
        spec = session_spec(args, delivery=Delivery(batch_delay_ms=args.batch_delay_ms))
        images, names = load_images(args.image)
        check_file_output("--output", args.output)  # before the sweep, not after it
        check_file_output("--csv", args.csv)
        with serving(spec) as spec:
            endpoint = spec.endpoints[0]  # --url is given once here
            plain = (
                PlainComparison(endpoint, spec.connection, images, plan, spec.timeouts.request_s)
                if args.compare_plain
                else None
            )
            traces = TraceRun.from_args(args)
            sweep = Sweep(
                spec,
                images,
                plan,
                on_progress=progress_printer(),
                extra_for_level=plain.at_level if plain is not None else None,
                on_session=traces.attach if traces is not None else None,
                on_session_end=traces.finish_session if traces is not None else None,
            )
            eprint(f"sweep: {len(plan.steps())} level(s), {plan.total_requests()} requests in all")
            try:
                sweep.run()
            except KeyboardInterrupt:
                sweep.cancel()
                eprint("interrupted")
                return EXIT_INTERRUPTED
            finally:
                if plain is not None:
                    plain.close()
            if traces is not None:
                traces.finish()  # the Chrome file, the tensors, the slowest said
            report = build_report(sweep, endpoint.url, names, plan)
    except (UsageError, SessionError, ProfileError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        eprint("interrupted")
        return EXIT_INTERRUPTED
    for note in report["notes"]:
        eprint(f"note: {note}")
    print(format_table(report), end="", flush=True)
    writes = (
        ("--output", args.output, lambda path: _write_json(path, report)),
        ("--csv", args.csv, lambda path: write_csv(path, sweep.results)),
    )
    for option, path, write in writes:
        if path and not write_output(option, path, functools.partial(write, path)):
            return EXIT_FAILED
    failed = [r for r in sweep.results if r.failed or r.extra.get("plain_failed")]
    for r in failed:
        eprint(f"{r.concurrency} in flight, {r.transport}: first failure: {r.first_error}")
    return EXIT_FAILED if failed else EXIT_OK


def _write_json(path: str, report: dict[str, Any]) -> None:
    write_whole(path, strict_json(report, indent=2) + "\n")
