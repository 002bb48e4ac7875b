"""`python -m app infer PATH...`: headless detection of images, folders and videos -> JSON Lines.

Threads, and why:
- the main thread walks the inputs, reads video frames and submits (`block=True`: the
  session's in-flight window is the backpressure that bounds memory);
- image files are decoded while earlier requests are in flight: in the main thread on a
  small machine (fewer threads competing with the server for 2 cores), else by a small
  reader pool a few images ahead, never holding more than a handful of images;
- results arrive on the session's worker threads and go straight to one writer (a lock
  around write + flush: records are whole lines, and appear as soon as they are known).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from app.commands.common import (
    DECODE_WORKERS,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    SMALL_MACHINE,
    UsageError,
    add_connection_arguments,
    add_model_arguments,
    connection_options,
    eprint,
    profile_overrides,
    server_urls,
)
from app.commands.progress import Progress
from app.inference.errors import SessionError
from app.inference.images import read_image
from app.inference.profile import ProfileError
from app.inference.result import InferenceResult, naming_input
from app.inference.session import TritonSession
from app.sources.files import InputItem, iter_image_paths
from app.sources.video_file import VideoFileReader

# Image-decoding threads (OpenCV releases the GIL while decoding); 0: the main thread reads.
READERS = 0 if SMALL_MACHINE else 2
LOOKAHEAD = 4 if READERS else 0  # decoded images waiting for a window slot, at most
MAX_FAILURE_LINES = 20  # failures echoed on stderr (all of them are in the records)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p)
    add_model_arguments(p)
    p.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="requests in flight at most (default 8)"
    )
    p.add_argument(
        "--output", default=None, metavar="FILE", help="write the JSON Lines here (default stdout)"
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="image files, folders (recursive), video files")


class RecordWriter:
    """One JSON Lines writer shared by every thread; counts what it wrote."""

    def __init__(self, stream: TextIO, progress: Progress) -> None:
        self.stream = stream
        self.progress = progress
        self.ok = 0
        self.failed = 0
        self.broken: str | None = None  # why output cannot be written any more (e.g. closed pipe)
        self._failure_lines = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return self.ok + self.failed

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        ok = bool(record.get("ok"))
        with self._lock:
            if ok:
                self.ok += 1
            else:
                self.failed += 1
            if self.broken is None:
                try:
                    self.stream.write(line)
                    self.stream.flush()
                except (OSError, ValueError) as e:
                    self.broken = f"cannot write the output: {e}"
            echo = not ok and self._failure_lines < MAX_FAILURE_LINES
            if echo:
                self._failure_lines += 1
                if self._failure_lines == MAX_FAILURE_LINES:
                    record = {**record, "error": f"{record.get('error')} (further failures: see the records)"}
        if echo:
            message = naming_input(record.get("source"), str(record.get("error")), record.get("frame"))
            self.progress.note(f"failed: {message}")
        self.progress.done(ok)


def failed_record(source: str, error: str, frame: int | None = None) -> dict[str, Any]:
    """The record of an input that never became a request (missing, unreadable, not media)."""
    return {
        "source": source,
        "frame": frame,
        "request_id": None,
        "ok": False,
        "error": error,
        "latency_ms": None,
        "width": None,
        "height": None,
        "detections": [],
    }


class _Outstanding:
    """Requests submitted whose callback has not run yet: `wait()` until none is left."""

    def __init__(self) -> None:
        self._n = 0
        self._cond = threading.Condition()

    def add(self) -> None:
        with self._cond:
            self._n += 1

    def remove(self) -> None:
        with self._cond:
            self._n -= 1
            if self._n == 0:
                self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._n == 0, timeout)


def _display_names(paths: Sequence[str]) -> dict[str, str]:
    """Path as normalised by pathlib -> the path exactly as the user typed it."""
    return {str(Path(p)): p for p in paths}


def _count_frames(path: Path) -> int:
    try:
        with VideoFileReader(path) as reader:
            return max(reader.frame_count, 1)
    except ValueError:
        return 1


class _InlineReader:
    """The reader pool's interface, reading at once in the calling thread."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:
            future.set_exception(e)
        return future


def _readers() -> contextlib.AbstractContextManager[Any]:
    if READERS == 0:
        return contextlib.nullcontext(_InlineReader())
    return concurrent.futures.ThreadPoolExecutor(READERS, "image-reader")


class InferJob:
    """Feeds every input to the session and writes one record per image / video frame."""

    def __init__(self, session: TritonSession, writer: RecordWriter, names: dict[str, str]) -> None:
        self.session = session
        self.writer = writer
        self.names = names
        self.outstanding = _Outstanding()
        self.stopping = False

    def source_of(self, path: Path) -> str:
        text = str(path)
        return self.names.get(text, text)

    def _on_result(self, result: InferenceResult) -> None:
        # A session worker thread: write and count, nothing else.
        try:
            self.writer.write(result.to_record())
        finally:
            self.outstanding.remove()

    def _submit(self, image: Any, source: str, frame: int | None) -> None:
        self.outstanding.add()
        try:
            rid = self.session.submit(image, self._on_result, source=source, frame=frame, block=True)
        except BaseException:
            self.outstanding.remove()
            raise
        if rid is None:  # cannot happen with block=True and no wait_s; never lose an input
            self.outstanding.remove()
            self.writer.write(failed_record(source, f"{source}: not sent (in-flight window full)", frame))

    def run(self, items: Sequence[InputItem]) -> None:
        queue: collections.deque[tuple[InputItem, concurrent.futures.Future[Any]]] = collections.deque()
        with _readers() as readers:
            try:
                for item in items:
                    if self.stopping or self.writer.broken:
                        break
                    if item.kind == "image":
                        queue.append((item, readers.submit(read_image, item.path)))
                        if len(queue) > LOOKAHEAD:
                            self._submit_read(*queue.popleft())
                        continue
                    while queue:  # keep the order of the inputs around a video
                        self._submit_read(*queue.popleft())
                    if item.kind == "video":
                        self._run_video(item.path)
                    else:
                        source = self.source_of(item.path)
                        self.writer.write(failed_record(source, item.error or f"{source}: unusable input"))
                while queue and not self.stopping and not self.writer.broken:
                    self._submit_read(*queue.popleft())
            finally:
                for _item, future in queue:
                    future.cancel()

    def _submit_read(self, item: InputItem, future: concurrent.futures.Future[Any]) -> None:
        source = self.source_of(item.path)
        try:
            image = future.result()
        except ValueError as e:  # read_image's message names the file and the cause
            self.writer.write(failed_record(source, str(e)))
            return
        except Exception as e:
            self.writer.write(failed_record(source, f"{source}: cannot read the image: {e}"))
            return
        self._submit(image, source, None)

    def _run_video(self, path: Path) -> None:
        source = self.source_of(path)
        try:
            reader = VideoFileReader(path)
        except ValueError as e:
            self.writer.write(failed_record(source, str(e)))
            return
        with reader:
            for frame in reader:
                if self.stopping or self.writer.broken:
                    break
                self._submit(frame.image, source, frame.index)
            if reader.frames_read == 0 and not self.stopping:
                self.writer.write(failed_record(source, f"{source}: the video has no readable frames"))


def _open_output(path: str | None) -> tuple[TextIO, bool]:
    if path is None:
        return sys.stdout, False
    try:
        return open(path, "w", encoding="utf-8"), True
    except OSError as e:
        raise UsageError(f"--output {path}: cannot write it ({e.strerror or e})") from None


def run(args: argparse.Namespace) -> int:
    out: TextIO | None = None
    close_out = False
    try:
        if args.concurrency < 1:
            raise UsageError("--concurrency must be >= 1")
        options = connection_options(args)
        overrides = profile_overrides(args)
        out, close_out = _open_output(args.output)
        with server_urls(args) as urls:
            session = TritonSession(
                urls,
                args.model,
                options=options,
                profile_overrides=overrides,
                timeout_s=args.timeout,
                max_in_flight=args.concurrency,
                decode_workers=DECODE_WORKERS,
                send_in_caller=True,  # this thread may block; one thread hop less per request
            )
            session.open()
            try:
                return _process(session, args.paths, out)
            finally:
                session.close(drain_timeout=0.5)
    except (UsageError, SessionError, ProfileError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:  # before processing began (e.g. while the server started)
        eprint("interrupted")
        return EXIT_INTERRUPTED
    finally:
        if close_out and out is not None:
            out.close()


def _process(session: TritonSession, paths: Sequence[str], out: TextIO) -> int:
    progress = Progress(None, what="inputs")
    writer = RecordWriter(out, progress)
    job = InferJob(session, writer, _display_names(paths))
    started = time.monotonic()
    interrupted = False
    try:
        items = list(iter_image_paths(paths))
        progress.total = sum(_count_frames(i.path) if i.kind == "video" else 1 for i in items)
        model = session.info.name if session.info else "?"
        eprint(
            f"{len(items)} input(s) ({progress.total} images/frames) -> model '{model}' "
            f"at {', '.join(session.urls)}"
        )
        job.run(items)
        job.outstanding.wait()
    except KeyboardInterrupt:
        interrupted = True
        job.stopping = True
        eprint("\ninterrupted: cancelling the requests in flight")
        session.cancel_all()
        job.outstanding.wait(timeout=5.0)
    seconds = time.monotonic() - started
    progress.finish()
    summary = {
        "summary": {
            "total": writer.total,
            "ok": writer.ok,
            "failed": writer.failed,
            "seconds": round(seconds, 3),
            "throughput": round(writer.total / seconds, 2) if seconds > 0 else 0.0,
        }
    }
    try:
        out.write(json.dumps(summary) + "\n")
        out.flush()
    except (OSError, ValueError) as e:
        writer.broken = writer.broken or f"cannot write the output: {e}"
    if writer.broken:
        eprint(f"error: {writer.broken}")
        return EXIT_FAILED
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if writer.failed else EXIT_OK
