"""`python -m app compare --model A --model B PATH...`: two models (or versions, or servers) on
the same inputs -> one JSON Lines record per input with both results and how they agree.

A thin adapter over `app.pipeline.compare.CompareBatch`: two sessions, two independent
batch jobs (each with its own window and feeding thread), results paired per input and
matched per class by IoU; the viewer's compare window runs the same pipeline.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    add_threshold_arguments,
    concurrency_argument,
    endpoints_of,
    eprint,
    float_range,
    path_argument,
    serving,
    session_spec,
    write_summary,
)
from app.commands.infer import _display_names, record_line
from app.commands.inputs import require_inputs
from app.commands.outputs import LineSink, close_records, discard_records, open_records, records_failure
from app.commands.progress import Progress
from app.commands.trace_output import TraceRun, add_trace_arguments
from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.errors import SessionError
from app.inference.protocol import Endpoint
from app.inference.redaction import url_without_password
from app.inference.result import naming_input
from app.pipeline.batch import VideoPolicy
from app.pipeline.compare import CompareBatch, ComparedInput, CompareTally, Side
from app.pipeline.matching import DEFAULT_IOU
from app.system.atomic_files import LineFile

MAX_FAILURE_LINES = 20
WORST_LISTED = 10  # inputs listed in the summary's "most_disagreement"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p)
    p.add_argument(
        "--url-b",
        action="append",
        default=[],
        metavar="URL",
        help="B's server(s) (repeatable); default: the same as A's",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="A's model, then B's (give it twice: --model A --model B; once: B is the same model)",
    )
    p.add_argument("--version-a", default="", metavar="N", help="A's model version (default: the server's)")
    p.add_argument("--version-b", default="", metavar="N", help="B's model version (default: the server's)")
    p.add_argument(
        "--match-iou",
        type=float_range("--match-iou", 0.01, 1.0),
        default=DEFAULT_IOU,
        metavar="T",
        help=f"two detections of a class match when their IoU is at least T (default {DEFAULT_IOU})",
    )
    add_threshold_arguments(p)
    p.add_argument(
        "--concurrency",
        type=concurrency_argument,
        default=8,
        metavar="N",
        help="requests in flight at most, for each model (default 8)",
    )
    p.add_argument(
        "--output",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="write the JSON Lines here (default stdout)",
    )
    add_trace_arguments(p, path_argument)
    p.add_argument(
        "paths",
        type=path_argument,
        nargs="+",
        metavar="PATH",
        help="image files, folders (recursive), video files",
    )


def _models(args: argparse.Namespace) -> tuple[str | None, str | None]:
    models = list(args.model)
    if len(models) > 2:
        raise UsageError(f"--model is given {len(models)} times: give A's, then B's")
    a = models[0] if models else None
    return a, models[1] if len(models) > 1 else a


def _open(name: str, spec: SessionSpec) -> TritonSession:
    try:
        return open_session(spec)
    except SessionError as e:
        raise SessionError(f"model {name}: {e}", e.kind, e.models) from None


@contextlib.contextmanager
def _sessions(
    args: argparse.Namespace, spec: SessionSpec, endpoints_b: tuple[Endpoint, ...]
) -> Iterator[dict[Side, TritonSession]]:
    """A's and B's sessions: `spec` (servers, TLS, timeout, concurrency) with each side's
    model and version, B on `endpoints_b` (--url-b) when given."""
    model_a, model_b = _models(args)
    spec_a = dataclasses.replace(spec, model=model_a, version=args.version_a)
    spec_b = dataclasses.replace(
        spec, model=model_b, version=args.version_b, endpoints=endpoints_b or spec.endpoints
    )
    opened: dict[Side, TritonSession] = {}
    try:
        opened[Side.A] = _open("A", spec_a)
        opened[Side.B] = _open("B", spec_b)
        yield opened
    finally:
        for session in opened.values():
            session.close(drain_timeout=0.5)


def describe(session: TritonSession) -> dict[str, Any]:
    info = session.info
    return {
        "model": info.name if info else session.spec.model,
        "version": session.spec.version or (info.version if info else ""),
        "urls": [url_without_password(url) for url in session.urls],
    }


class PairWriter:
    """Writes each compared input as one JSON line (any thread); echoes failures on stderr."""

    def __init__(self, stream: LineSink, progress: Progress, tally: CompareTally) -> None:
        self.stream = stream
        self.progress = progress
        self.tally = tally
        self.broken: str | None = None
        self.on_broken: list[Any] = []
        self._encoding = getattr(stream, "encoding", None)
        self._lock = threading.Lock()
        self._failure_lines = 0
        self.traces: TraceRun | None = None  # --trace: traced pairs wait for their traces

    def write(self, pair: ComparedInput) -> None:
        record = pair.to_record()
        sides: dict[str | None, str | None] = {"a": pair.a.request_id, "b": pair.b.request_id}
        if self.traces is not None and self.traces.hold_parts(
            record, sides, lambda r: self.write_record(r, pair)
        ):
            return  # written once its sides' traces are known (TraceRun)
        self.write_record(record, pair)

    def write_record(self, record: dict[str, Any], pair: ComparedInput) -> None:
        line = record_line(record, self._encoding)
        with self._lock:
            if self.broken is not None:
                return
            try:
                self.stream.write(line)
                self.stream.flush()
            except (OSError, ValueError) as e:
                self.broken = records_failure(self.stream, e)
            else:
                self.tally.add(pair)
        if self.broken is not None:
            for stop in self.on_broken:
                stop()
            return
        ok = pair.ok or pair.skipped
        if not ok:
            self._echo(pair)
        self.progress.done(ok)

    def _echo(self, pair: ComparedInput) -> None:
        with self._lock:
            if self._failure_lines >= MAX_FAILURE_LINES:
                return
            self._failure_lines += 1
        for side, result in ((Side.A, pair.a), (Side.B, pair.b)):
            if not result.ok and result.error:
                message = naming_input(result.source, result.error, result.frame)
                self.progress.note(f"{side.upper()} {result.status.value}: {message}")


def run(args: argparse.Namespace) -> int:
    out: TextIO | LineFile | None = None
    close_out = False
    status = EXIT_USAGE
    ran = False  # records were written (else an --output file is dropped: the old one stays)
    try:
        _models(args)  # usage errors first, before any server starts
        require_inputs(args.paths)
        spec = session_spec(args)
        endpoints_b = endpoints_of(args, "url_b")
        out, close_out = open_records(args.output)
        if args.url_b and not args.url:
            eprint("note: A uses the embedded server, B the --url-b server(s)")
        with serving(spec) as spec, _sessions(args, spec, endpoints_b) as sessions:
            ran = True
            status = _process(sessions, args, out)
    except (UsageError, SessionError) as e:
        eprint(f"error: {e}")
        status = EXIT_USAGE
    except KeyboardInterrupt:
        eprint("interrupted")
        status = EXIT_INTERRUPTED
    finally:
        if close_out and out is not None:
            status = close_records(out, status) if ran else discard_records(out, status)
    return status


def _process(sessions: dict[Side, TritonSession], args: argparse.Namespace, out: LineSink) -> int:
    progress = Progress(None, what="inputs")
    tally = CompareTally()
    writer = PairWriter(out, progress, tally)
    traces = writer.traces = TraceRun.from_args(args)
    if traces is not None:
        for session in sessions.values():
            traces.attach(session)
    names = _display_names(args.paths)
    a, b = describe(sessions[Side.A]), describe(sessions[Side.B])

    def started(total: int) -> None:
        progress.total = total
        eprint(f"{total} input(s) -> A: {_label(a)}, B: {_label(b)}")

    job = CompareBatch(
        sessions[Side.A],
        sessions[Side.B],
        args.paths,
        writer.write,
        iou_threshold=args.match_iou,
        window=args.concurrency,
        videos=VideoPolicy.FRAMES,
        on_started=started,
        source_name=lambda path: names.get(str(path), str(path)),
    )
    writer.on_broken.append(job.cancel)
    tally.started = time.monotonic()
    interrupted = False
    try:
        job.run()
    except KeyboardInterrupt:
        interrupted = True
        eprint("\ninterrupted: the requests in flight were cancelled")
    if traces is not None:
        traces.finish()  # the held pairs written with their traces, the files
    seconds = time.monotonic() - tally.started
    progress.finish()
    summary = tally.summary()
    summary["seconds"] = round(seconds, 3)
    summary["iou_threshold"] = args.match_iou
    summary["a"] = a | summary["a"]
    summary["b"] = b | summary["b"]
    summary["most_disagreement"] = [row.to_record() for row in tally.most_disagreement(WORST_LISTED)]
    counts_a, counts_b = job.counts()
    not_started = max(counts_a.not_started, counts_b.not_started)
    if interrupted or not_started:
        summary["interrupted"] = interrupted
        summary["not_started"] = not_started
    writer.broken = write_summary(out, summary, writer.broken, lambda e: records_failure(out, e))
    if writer.broken:
        return EXIT_FAILED
    eprint(
        f"agreement {summary['agreement']:.3f}: {summary['matched']} matched, "
        f"{summary['only_a']} only in A, {summary['only_b']} only in B"
    )
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if summary["failed"] or not_started else EXIT_OK


def _label(side: dict[str, Any]) -> str:
    version = f" v{side['version']}" if side.get("version") else ""
    return f"'{side['model']}'{version} at {', '.join(side['urls'])}"
