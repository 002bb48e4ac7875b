"""`python -m app infer PATH...`: headless detection of images, folders and videos -> JSON Lines.

A thin adapter over `app.pipeline.batch.BatchJob` (the viewer's batches run the same
job, so both write the same records). The main thread feeds (the session's windows are
the backpressure that bounds memory); results arrive on the session's worker threads and
go straight to one writer (a lock around write + flush: records are whole lines, and
appear as soon as they are known). --zones and --heatmap (app.commands.infer_analytics) take
each video's frames after its tracker, in frame order; their events follow the frame records.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    SMALL_MACHINE,
    UsageError,
    add_connection_arguments,
    add_model_arguments,
    add_speed_arguments,
    add_threshold_arguments,
    concurrency_argument,
    delivery_of,
    eprint,
    path_argument,
    say_once,
    serving,
    session_spec,
    tell_session,
    write_summary,
)
from app.commands.infer_analytics import InferAnalytics
from app.commands.infer_analytics import add_arguments as add_analytics_arguments
from app.commands.inputs import require_inputs
from app.commands.outputs import LineSink, close_records, discard_records, open_records, records_failure
from app.commands.progress import Progress
from app.commands.resume import Resumed
from app.commands.resume import find as find_resumed
from app.commands.trace_output import TraceRun, add_trace_arguments
from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.stats import TimingTotals
from app.inference.core.tally import StatusCounts
from app.inference.errors import ExtensionMissingError, SessionError
from app.inference.introspection.server_stats import ServerCounters, read_settled, split, stages_note
from app.inference.profiles.profile import ProfileError
from app.inference.result import InferenceResult, Status, naming_input, record_line
from app.pipeline.batch import BatchCounts, BatchJob, VideoPolicy
from app.pipeline.exports import FORMATS
from app.pipeline.exports.formats import ExportFormat
from app.pipeline.exports.stream import ExportStream
from app.pipeline.exports.vocabulary import ModelVocabulary
from app.pipeline.frame_order import StreamsInOrder
from app.pipeline.tracking import StreamTrackers, load_tracker_library
from app.system.atomic_files import LineFile

# Image-decoding threads (OpenCV releases the GIL while decoding); 0: the main thread reads.
READERS = 0 if SMALL_MACHINE else 2
MAX_FAILURE_LINES = 20  # failures echoed on stderr (all of them are in the records)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p)
    add_model_arguments(p)
    add_threshold_arguments(p)
    add_speed_arguments(p)
    p.add_argument(
        "--concurrency",
        type=concurrency_argument,
        default=8,
        metavar="N",
        help="requests in flight at most (default 8)",
    )
    p.add_argument(
        "--format",
        choices=[f.value for f in FORMATS],
        default=ExportFormat.JSONL.value,
        help="jsonl: the records (default); coco: one COCO JSON file; yolo, voc, labelme, dota: a "
        "folder of one file per image, named after it (photo.txt, photo.xml, photo.json); "
        "yolo writes YOLO-OBB lines and dota the corners of an OBB model's oriented boxes",
    )
    p.add_argument(
        "--output",
        type=path_argument,
        default=None,
        metavar="PATH",
        help="jsonl: a file (default stdout); coco: the file to write; yolo/voc/labelme/dota: the folder",
    )
    p.add_argument(
        "--track",
        action="store_true",
        help="video frames: give each detection a track id that follows the object across frames",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run that was killed: keep the records it wrote to --output (its "
        "temporary NAME.*.part file, or the file itself) and send only the inputs they do not "
        "end; the summary counts both runs (jsonl records only, without --track)",
    )
    add_analytics_arguments(p, path_argument)
    add_trace_arguments(p, path_argument)
    p.add_argument(
        "paths",
        type=path_argument,
        nargs="+",
        metavar="PATH",
        help="image files, folders (recursive), video files",
    )


class RecordWriter:
    """One JSON Lines writer shared by every thread; counts what it wrote, by status."""

    def __init__(
        self,
        stream: LineSink | None,
        progress: Progress,
        export: ExportStream | None = None,
        events: LineSink | None = None,
    ) -> None:
        self.stream = stream  # None: records are not written out (another --format is)
        # Where analytics events go when the records do not (another --format): the summary's
        # stream, so they are not lost.
        self.events = stream if stream is not None else events
        self.export = export
        self.progress = progress
        self.counts = StatusCounts()  # of the records written
        # Records of requests the server answered (ok, failed or timed out there): the run's
        # throughput. A file that cannot be read never was a request: it does not count.
        self.answered = 0
        self.broken: str | None = None  # why output cannot be written any more (e.g. closed pipe)
        self.on_broken: list[Any] = []  # called once when the output breaks (stop feeding)
        self._failure_lines = 0
        self._lock = threading.Lock()
        self._encoding = getattr(stream, "encoding", None)
        self.timing = TimingTotals()  # the client time split of the records written
        self.traces: TraceRun | None = None  # --trace: traced requests' records wait for their trace

    def carry_over(self, resumed: Resumed) -> None:
        """An earlier run's records, first in the file, counted as this run's (--resume)."""
        assert self.stream is not None
        with self._lock:
            try:
                for line in resumed.lines:
                    self.stream.write(line)
                self.stream.flush()
            except (OSError, ValueError) as e:
                self.broken = records_failure(self.stream, e)
                return
            self.counts = StatusCounts._make(a + b for a, b in zip(self.counts, resumed.counts, strict=True))
        resumed.remove_source()  # its records are in this run's file now

    def write_result(self, result: InferenceResult) -> None:
        self.timing.add(result.timing)
        if self.export is not None and self.broken is None:
            try:
                self.export.add(result)
            except OSError as e:
                # The first file that cannot be written stops the run (not after all inference).
                self._break(f"cannot write the {self.export.fmt} export: {e}; the run stopped there")
                return
        record = result.to_record()
        if self.traces is not None and self.traces.hold(result.request_id, record):
            return  # written with its trace, once known (TraceRun)
        self.write(record)

    def _break(self, reason: str) -> None:
        with self._lock:
            if self.broken is not None:
                return
            self.broken = reason
        for stop in self.on_broken:
            stop()

    def write_event(self, record: dict[str, Any]) -> None:
        """An analytics event (--zones): written beside the records, counted in no status."""
        if self.events is None:
            return
        line = record_line(record, self._encoding)
        with self._lock:
            if self.broken is not None:
                return
            try:
                self.events.write(line)
                self.events.flush()
            except (OSError, ValueError) as e:
                self.broken = records_failure(self.events, e)
            else:
                return
        for stop in self.on_broken:
            stop()

    def write(self, record: dict[str, Any]) -> None:
        line = record_line(record, self._encoding)
        status = Status(record["status"])
        ok = status is Status.OK
        newly_broken = False
        with self._lock:
            if self.broken is not None:
                return  # not written: not counted
            try:
                if self.stream is not None:
                    self.stream.write(line)
                    self.stream.flush()
            except (OSError, ValueError) as e:
                self.broken = records_failure(self.stream, e)
                newly_broken = True
            else:
                self.counts = self.counts.add(status)  # counted once written
                if record.get("request_id") is not None and status is not Status.CANCELLED:
                    self.answered += 1
            echo = (
                not ok
                and status is not Status.SKIPPED
                and not newly_broken
                and self._failure_lines < MAX_FAILURE_LINES
            )
            if echo:
                self._failure_lines += 1
                if self._failure_lines == MAX_FAILURE_LINES:
                    record = {**record, "error": f"{record.get('error')} (further failures: see the records)"}
        if newly_broken:
            for stop in self.on_broken:
                stop()
            return
        if echo:
            message = naming_input(record.get("source"), str(record.get("error")), record.get("frame"))
            self.progress.note(f"{status.value}: {message}")
        self.progress.done(ok, skipped=status is Status.SKIPPED)


def _display_names(paths: Sequence[str]) -> dict[str, str]:
    """Path as normalised by pathlib -> the path exactly as the user typed it."""
    return {str(Path(p)): p for p in paths}


def run(args: argparse.Namespace) -> int:
    out: TextIO | LineFile | None = None
    close_out = False
    status = EXIT_USAGE
    ran = False  # records were written (else an --output file is dropped: the old one stays)
    try:
        require_inputs(args.paths)  # before the server starts (app.commands.inputs)
        spec = session_spec(args, delivery=delivery_of(args))
        fmt = ExportFormat(getattr(args, "format", ExportFormat.JSONL))
        names = _display_names(args.paths)
        analytics = InferAnalytics.from_args(args, lambda path: names.get(str(path), str(path)))
        resumed = _resumed(args, fmt, analytics)  # before this run's own temporary file exists
        out, close_out = open_records(args.output, fmt)
        with serving(spec) as spec:
            session = open_session(spec)
            try:
                export = None
                if fmt is not ExportFormat.JSONL:
                    vocabulary = ModelVocabulary.from_profile(session.info.profile) if session.info else ()
                    export = ExportStream(fmt, args.output, args.paths, vocabulary)
                ran = True
                status = _process(
                    session,
                    args.paths,
                    args.concurrency,
                    out,
                    export,
                    getattr(args, "track", False),
                    analytics,
                    TraceRun.from_args(args),
                    resumed,
                )
            finally:
                session.close(drain_timeout=0.5)
    except (UsageError, SessionError, ProfileError) as e:
        eprint(f"error: {e}")
        status = EXIT_USAGE
    except KeyboardInterrupt:  # before processing began (e.g. while the server started)
        eprint("interrupted")
        status = EXIT_INTERRUPTED
    finally:
        if close_out and out is not None:
            status = close_records(out, status) if ran else discard_records(out, status)
    return status


def _resumed(args: argparse.Namespace, fmt: ExportFormat, analytics: InferAnalytics | None) -> Resumed | None:
    """--resume: the earlier run's records (UsageError for what cannot be resumed)."""
    if not getattr(args, "resume", False):
        return None
    if fmt is not ExportFormat.JSONL:
        raise UsageError(f"--resume continues JSON Lines records; --format {fmt} is written whole at the end")
    if getattr(args, "track", False) or analytics is not None:
        raise UsageError(
            "--resume cannot continue --track, --zones or --heatmap (a video's tracks start at "
            "its first frame)"
        )
    resumed = find_resumed("--output", args.output)
    eprint(resumed.describe("--output"))
    return resumed


def _process(
    session: TritonSession,
    paths: Sequence[str],
    concurrency: int,
    out: LineSink,
    export: ExportStream | None = None,
    track: bool = False,
    analytics: InferAnalytics | None = None,
    traces: TraceRun | None = None,
    resumed: Resumed | None = None,
) -> int:
    if track:
        try:
            load_tracker_library()  # before any request: a tracker that fails later loses results
        except ImportError as e:
            raise UsageError(
                f"--track: the tracking library (Norfair, SciPy) cannot be loaded: {e}"
            ) from None
    progress = Progress(None, what="inputs")
    # With another --format, the records go to the export and only the summary to `out`.
    writer = RecordWriter(out if export is None else None, progress, export, events=out)
    if resumed is not None and resumed.kept:
        writer.carry_over(resumed)
    if traces is not None:
        traces.write, writer.traces = writer.write, traces
        traces.attach(session)
    # --track: each video's frames reach its own tracker in frame order, then the writer;
    # --zones/--heatmap: then its analytics, whose events follow the frame's record.
    trackers = StreamTrackers() if track else None

    def deliver(result: InferenceResult) -> None:
        if trackers is not None:
            result = trackers.track(result)
        writer.write_result(result)
        if analytics is not None:
            for event in analytics.feed(result):
                writer.write_event(event)

    ordered = trackers is not None or analytics is not None
    order = StreamsInOrder(deliver) if ordered else None
    names = _display_names(paths)
    model = session.info.name if session.info else "?"

    def started(total: int) -> None:
        progress.total = total
        eprint(f"{total} input(s) -> model '{model}' at {', '.join(session.urls)}")
        tell_session(session)

    job = BatchJob(
        session,
        paths,
        order.add if order is not None else writer.write_result,
        window=concurrency,
        videos=VideoPolicy.FRAMES,
        on_started=started,
        readers=READERS,
        source_name=lambda path: names.get(str(path), str(path)),
        done=resumed.done if resumed is not None else (),
    )
    writer.on_broken.append(job.cancel)
    counters_before = _server_counters(session)
    t0 = time.monotonic()  # also the start of the server statistics' interval
    interrupted = False
    try:
        counts = job.run()
    except KeyboardInterrupt:
        interrupted = True
        eprint("\ninterrupted: the requests in flight were cancelled")
        counts = job.counts()
    if resumed is not None and job.resumed < resumed.kept and not interrupted:
        eprint(
            f"warning: --resume: {resumed.kept - job.resumed} earlier record(s) name no input of this "
            "run (the inputs given under other paths?); kept in the file as they were"
        )
    if order is not None:
        order.flush()  # frames behind one never sent (interrupted): written in order
    if analytics is not None:
        for event in analytics.finish():  # the visits still open end with their videos
            writer.write_event(event)
    if traces is not None:
        traces.finish()  # the held records written with their traces, the files
    seconds = time.monotonic() - t0
    progress.finish()
    retried = session.stats.snapshot().retried
    if retried:  # e.g. a server of a fleet that died: what it had in flight went to the others
        eprint(f"{retried} request(s) sent again after a transient failure (server unreachable, restarting)")
    if export is not None and writer.broken is None:
        try:
            exported = export.finish()
            eprint(f"{export.fmt}: {exported} image(s) written to {export.output}")
            for warning in export.warnings():
                eprint(f"warning: {warning}")
        except OSError as e:
            writer.broken = f"cannot write the {export.fmt} export: {e}"
    summary = _summary(writer, counts, seconds, interrupted)
    if resumed is not None:
        summary["resumed"] = {
            "from": None if resumed.source is None else str(resumed.source),
            "records": resumed.kept,
        }
    summary["timing"] = _timing(writer.timing, session, counters_before, t0)
    summary["transport"] = session.transport.kind.value if session.transport else None
    # Attempts sent again (a transient failure, or no answer within the attempt timeout).
    summary["retried"] = session.stats.snapshot().retried
    summary["protocol"] = session.protocol.value
    if analytics is not None:
        _analytics_summary(analytics, summary, writer)
    if trackers is not None:  # per video: how many tracks, how many flickered (< 3 frames)
        summary["tracks"] = {
            source: tracker.book.flicker(ended_only=False).to_record()
            for source, tracker in trackers.trackers.items()
        }
    writer.broken = write_summary(out, summary, writer.broken, lambda e: records_failure(out, e))
    if writer.broken:
        return EXIT_FAILED
    if interrupted:
        return EXIT_INTERRUPTED
    failed = summary["failed"] or summary.get("not_started", 0)
    return EXIT_FAILED if failed else EXIT_OK


def _analytics_summary(analytics: InferAnalytics, summary: dict[str, Any], writer: RecordWriter) -> None:
    """The summary's "analytics" and "heatmaps"; a heat map that cannot be written fails the run."""
    counts = analytics.summary()
    if counts is not None:
        summary["analytics"] = counts
    heatmaps, errors = analytics.save_heatmaps()
    if analytics.heatmap is not None:
        summary["heatmaps"] = heatmaps
        for source, path in heatmaps.items():
            eprint(f"heat map of {source}: {path}")
    if errors:
        writer.broken = writer.broken or "; ".join(errors)


def _server_counters(session: TritonSession) -> ServerCounters | None:
    """Triton's cumulative statistics now (None when the server does not give them)."""
    try:
        return session.read_server_counters()
    except ExtensionMissingError as e:  # not Triton: said once, in its own words
        say_once(str(e))
        return None
    except Exception as e:  # statistics are a bonus: never fail a run for them
        eprint(f"note: no server statistics ({str(e).splitlines()[0][:200]})")
        return None


def _timing(
    totals: TimingTotals, session: TritonSession, before: ServerCounters | None, since: float
) -> dict[str, Any]:
    """Means per request: the client's split of the records, the server's from its statistics
    over the run (other clients of the same model would be counted too), with its batcher's
    average batch and executions per second (`since`: when `before` was read, monotonic)."""
    timing: dict[str, Any] = {}
    client = totals.means()
    if client is not None:
        timing.update(client.to_record())
    calls = 0 if client is None else -(-client.requests // session.batching)  # answered
    after = None if before is None else read_settled(lambda: _server_counters(session), before, calls)
    seconds = time.monotonic() - since
    server = split(before, after, seconds) if before is not None and after is not None else None
    if server is not None:
        timing.update(server.to_record())
        if server.stages:
            eprint(f"note: {stages_note(s.model for s in server.stages)}")
    return timing


def _summary(writer: RecordWriter, counts: BatchCounts, seconds: float, interrupted: bool) -> dict[str, Any]:
    """Counts of the records written (a record counts once written), not of those attempted."""
    written = writer.counts
    summary: dict[str, Any] = {
        "total": written.ended,
        "ok": written.ok,
        "failed": written.unsuccessful,
        "skipped": written.skipped,
        "seconds": round(seconds, 3),
        "throughput": round(writer.answered / seconds, 2) if seconds > 0 else 0.0,
    }
    if interrupted or counts.not_started:
        summary["interrupted"] = interrupted
        summary["not_started"] = counts.not_started
    return summary
