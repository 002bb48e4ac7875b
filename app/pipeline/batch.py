"""BatchJob: files, folders and videos -> exactly one result per input, through a bounded window.

Threads, and why:
- `run()` feeds on the calling thread (the CLI's main thread, or the thread `start()`
  makes for the viewer): walking folders, reading files and waiting for a window slot
  all block, so never on a GUI thread.
- Images are decoded on that thread (small machines: fewer threads competing with the
  server for 2 cores) or by `readers` threads a few images ahead; on the main thread by one
  reader thread, so that Ctrl-C never lands inside a file's opening.
- Results arrive on the session's worker threads; `on_result` must only hand off.
Every input ends once: a request's result, or a local one (unreadable, not media,
skipped) built by `InferenceResult.local_failure`, the same for the viewer and the CLI.
The job's request group counts them all and says when the last one was handed on
("drained"): `on_finished` is that signal, `run()` and `wait()` wait for it.
`done`: the inputs (source, frame) an earlier run already ended (a resumed run): not read
again where they are whole files, not sent, not counted in this job's total.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.core.tally import StatusCounts
from app.inference.errors import SessionClosedError
from app.inference.profiles.profile import input_side_needed
from app.inference.result import ErrorKind, InferenceResult, Status
from app.pipeline.thumbnails import make_thumbnail
from app.sources.files import InputItem, expand_inputs
from app.sources.images import DecodedImage, ImagePages, page_count, read_image_for
from app.sources.sniff import is_gif_file
from app.sources.video_file import FrameFailure, VideoFileReader

# An image read, and when its reading began and ended (monotonic seconds).
_Read = tuple[DecodedImage, tuple[float, float]]
log = logging.getLogger(__name__)

ResultCallback = Callable[[InferenceResult], None]


class VideoPolicy(enum.StrEnum):
    FRAMES = "frames"  # every frame of a video file is an input (the command line)
    REFUSE = "refuse"  # a video is a failed input pointing to the live preview (the viewer)


VIDEO_REFUSED = (
    "{source}: a video file; play it with File > Open video… (live preview), "
    "or run `python -m app infer` on it for every frame"
)
GIF_REFUSED = (
    "{source}: a GIF (read as frames, like a video); play it with File > Open video… (live "
    "preview), or run `python -m app infer` on it for every frame"
)
PAGES_REFUSED = (
    "{source}: a multi-page TIFF ({pages} pages), not read here; run `python -m app infer` on it "
    "for a record per page"
)


@dataclass(frozen=True)
class BatchCounts:
    total: int  # inputs known: images, video frames, and entries that are not usable
    ok: int = 0
    failed: int = 0
    timeout: int = 0
    cancelled: int = 0
    skipped: int = 0
    not_started: int = 0  # inputs never sent because the job was cancelled first
    sent: int = 0  # inputs that became requests (not an unreadable file, not a skipped entry)

    @classmethod
    def of(cls, total: int, counts: StatusCounts) -> BatchCounts:
        c = counts
        return cls(total, c.ok, c.failed, c.timeout, c.cancelled, c.skipped, c.not_started, c.sent)

    @property
    def answered(self) -> int:
        """Requests that ended other than cancelled: what a throughput counts."""
        return max(self.sent - self.cancelled, 0)

    @property
    def done(self) -> int:
        return self.ok + self.failed + self.timeout + self.cancelled + self.skipped

    @property
    def unsuccessful(self) -> int:
        """Inputs that did not succeed and were not skipped (the exit status counts these)."""
        return self.failed + self.timeout + self.cancelled


class BatchJob:
    """One batch: `run()` (blocking) or `start()` (its own thread); `cancel()` from any thread."""

    def __init__(
        self,
        session: TritonSession,
        paths: Sequence[str | Path],
        on_result: ResultCallback,
        *,
        window: int = 8,
        videos: VideoPolicy = VideoPolicy.FRAMES,
        on_thumbnail: Callable[[str, np.ndarray], None] | None = None,
        on_started: Callable[[int], None] | None = None,
        on_finished: Callable[[BatchCounts], None] | None = None,
        readers: int = 0,
        lookahead: int = 4,
        source_name: Callable[[Path], str] = str,
        read_image: Callable[[Path, int | None], DecodedImage] = read_image_for,
        done: Collection[tuple[str, int | None]] = (),
    ) -> None:
        self.session = session
        self.paths = list(paths)
        self._on_result = on_result
        self._on_thumbnail = on_thumbnail  # an image was read: its thumbnail (feeding thread)
        self._on_started = on_started  # the number of inputs is known (feeding thread)
        self._on_finished = on_finished  # every input's result was handed on (drained)
        self.videos = videos
        self.readers = readers
        self.lookahead = lookahead if readers else 0
        self.source_name = source_name
        self._read_image = read_image  # (path, min_side): e.g. shared by the two sides of a compare
        self._done = frozenset(done)
        self.resumed = 0  # inputs left out: an earlier run ended them (feeding thread)
        # Drained: the job closed the group (fed everything, or was cancelled) and the last
        # result was handed on; on the thread that handed it on (or the feeding thread).
        self.group = session.group(window, "batch", on_drained=self._drained)
        self._total = 0  # written by the feeding thread only
        self._cancelled = threading.Event()
        self._thread: threading.Thread | None = None
        self._frames_declared: dict[Path, int] = {}  # video -> frame count from its container
        self._pages: dict[Path, int] = {}  # image -> pages (a multi-page TIFF: more than 1)
        # Images and MJPG frames are decoded no bigger than the model needs (a JPEG decoder
        # can skip the detail: 2-3x less work than decoding in full and resizing).
        self.min_side = input_side_needed(session.profile)

    # -- control (any thread) ----------------------------------------------------------------
    def start(self) -> None:
        """Run on a thread of its own (the viewer): nothing here may block a GUI thread."""
        self._thread = threading.Thread(target=self._run_quietly, name="batch-job", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop feeding and cancel what is in flight (those end as cancelled); inputs not yet
        sent are counted as not started. Returns at once."""
        self._cancelled.set()
        self.group.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def finished(self) -> bool:
        return self.group.drained

    def wait(self, timeout: float | None = None) -> bool:
        """Until every input's result was handed on (and `on_finished` has run)."""
        return self.group.wait_drained(timeout)

    def counts(self) -> BatchCounts:
        return BatchCounts.of(self._total, self.group.counts)

    def _drained(self) -> None:
        if self._on_finished is not None:
            self._on_finished(self.counts())

    # -- the feeding thread ---------------------------------------------------------------------
    def _run_quietly(self) -> None:
        try:
            self.run()
        except SessionClosedError:
            pass  # the viewer switched servers: the job's inputs are counted as not started
        except Exception:
            log.exception("batch job failed")

    def run(self) -> BatchCounts:
        """Feed every input, wait for every result; returns the counts. On KeyboardInterrupt the
        job is cancelled (in-flight requests end as cancelled) and the interrupt re-raised."""
        try:
            items = self._not_done(list(expand_inputs(self.paths)))
            self._add_total(sum(self._inputs_in(item) for item in items) - self._frames_done(items))
            if self._on_started is not None:
                self._on_started(self._total)
            self._feed(items)
            self._settle_not_started()
            self.group.close()  # everything was fed: drained follows the last result
            self.group.wait_drained()
        except BaseException:
            # Interrupted anywhere (Ctrl-C, SIGTERM, a failure while feeding): what was never
            # sent is counted now, before "finished" reports the counts.
            self.cancel()
            self._settle_not_started()
            self.group.close()
            self.group.wait_drained(5.0)
            raise
        return self.counts()

    def _frames_of(self, item: InputItem) -> bool:
        """Whether the item's inputs are its frames (or pages), each with its own index."""
        if self.videos is not VideoPolicy.FRAMES:
            return False
        return item.kind == "video" or (item.kind == "image" and self._pages_in(item) > 1)

    def _not_done(self, items: list[InputItem]) -> list[InputItem]:
        """`items` without the whole inputs an earlier run ended (a resumed run)."""
        if not self._done:
            return items
        left = [
            item
            for item in items
            if self._frames_of(item) or (self.source_name(item.path), None) not in self._done
        ]
        self.resumed += len(items) - len(left)
        return left

    def _frames_done(self, items: Sequence[InputItem]) -> int:
        """Frames (pages) of `items` an earlier run ended: sent no more, not in the total."""
        if not self._done:
            return 0
        count = 0
        for item in items:
            if self._frames_of(item):
                source = self.source_name(item.path)
                count += sum(1 for f in range(self._inputs_in(item)) if (source, f) in self._done)
        self.resumed += count
        return count

    def _settle_not_started(self) -> None:
        """Count as not started every announced input the group has not accounted for (sent,
        handed on without a request, or already counted): `total` = ended + not_started
        once drained, whatever interrupted the feeding."""
        self._count_not_started(max(self._total - self.group.accounted, 0))

    def _pages_in(self, item: InputItem) -> int:
        if item.kind != "image":
            return 1
        if item.path not in self._pages:
            self._pages[item.path] = page_count(item.path)
        return self._pages[item.path]

    def _inputs_in(self, item: InputItem) -> int:
        if item.kind == "image" and self.videos is VideoPolicy.FRAMES:
            return self._pages_in(item)  # a multi-page TIFF: one input per page
        if item.kind != "video" or self.videos is not VideoPolicy.FRAMES:
            return 1
        if item.path not in self._frames_declared:
            count = 1
            with contextlib.suppress(ValueError), VideoFileReader(item.path) as reader:
                count = max(reader.frame_count, 1)
            self._frames_declared[item.path] = count
        return self._frames_declared[item.path]

    def _feed(self, items: Sequence[InputItem]) -> None:
        queue: collections.deque[tuple[InputItem, concurrent.futures.Future[_Read]]] = collections.deque()
        with self._reader_pool() as pool:
            try:
                for index, item in enumerate(items):
                    if self.cancelled:
                        self._not_started(items[index:], queue)
                        return
                    if item.kind == "image" and self._pages_in(item) == 1:
                        queue.append((item, pool.submit(self._timed_read, item.path)))
                        if len(queue) > self.lookahead:
                            self._send_read(*queue.popleft())
                        continue
                    while queue:  # keep the order of the inputs around a video
                        self._send_read(*queue.popleft())
                    self._feed_other(item)
                while queue and not self.cancelled:
                    self._send_read(*queue.popleft())
                self._not_started([], queue)
            finally:
                for _item, future in queue:
                    future.cancel()

    def _feed_other(self, item: InputItem) -> None:
        source = self.source_name(item.path)
        if item.kind == "image":  # a multi-page TIFF
            if self.videos is VideoPolicy.FRAMES:
                self._feed_pages(item.path, source)
            else:
                refused = PAGES_REFUSED.format(source=source, pages=self._pages_in(item))
                self._local(InferenceResult.local_failure(source, refused))
        elif item.kind == "video":
            if self.videos is VideoPolicy.FRAMES:
                self._feed_video(item.path, source)
            else:
                refused = (GIF_REFUSED if is_gif_file(item.path) else VIDEO_REFUSED).format(source=source)
                self._local(InferenceResult.local_failure(source, refused))
        elif item.kind == "skipped":
            error = item.error or f"{source}: not an image or a video"
            self._local(
                InferenceResult.local_failure(source, error, status=Status.SKIPPED, kind=ErrorKind.SKIPPED)
            )
        else:
            self._local(InferenceResult.local_failure(source, item.error or f"{source}: unusable input"))

    def _timed_read(self, path: Path) -> _Read:
        """The image, and when its reading began and ended (a traced request's `read`)."""
        start = time.monotonic()
        decoded = self._read_image(path, self.min_side)
        return decoded, (start, time.monotonic())

    def _send_read(self, item: InputItem, future: concurrent.futures.Future[_Read]) -> None:
        source = self.source_name(item.path)
        try:
            decoded, read_span = future.result()
        except ValueError as e:  # read_image_for's message names the file and the cause
            self._local(InferenceResult.local_failure(source, str(e)))
            return
        except Exception as e:
            self._local(InferenceResult.local_failure(source, f"{source}: cannot read the image: {e}"))
            return
        if self._on_thumbnail is not None:
            self._on_thumbnail(source, make_thumbnail(decoded.image))
        self._send(decoded.image, source, None, (decoded.width, decoded.height), read_span)

    def _feed_pages(self, path: Path, source: str) -> None:
        """Every page of a multi-page TIFF, in order, as its own input (`frame`: the page)."""
        declared = self._pages[path]
        try:
            pages = ImagePages(path)
        except ValueError as e:
            self._add_total(1 - declared)
            self._local(InferenceResult.local_failure(source, str(e)))
            return
        self._add_total(pages.count - declared)  # the file changed since it was counted
        for index in range(pages.count):
            if self.cancelled:
                return  # the rest: counted as not started
            try:
                page = pages.read(index)
            except ValueError as e:
                self._local(InferenceResult.local_failure(source, str(e), frame=index))
                continue
            self._send(page.image, source, index, (page.width, page.height))

    def _feed_video(self, path: Path, source: str) -> None:
        declared = self._inputs_in(InputItem(path, "video"))
        try:
            reader = VideoFileReader(path, self.min_side)
        except ValueError as e:
            self._add_total(1 - declared)
            self._local(InferenceResult.local_failure(source, str(e)))
            return
        with reader:
            for frame in reader.items():
                if self.cancelled:
                    break
                if isinstance(frame, FrameFailure):  # e.g. after the stream's size changed
                    self._local(InferenceResult.local_failure(source, frame.error, frame=frame.index))
                    continue
                self._send(frame.image, source, frame.index, frame.source_size)
        read = reader.frames_read
        if self.cancelled:
            self._count_not_started(max(declared - read, 0))
        elif read == 0:
            self._add_total(1 - declared)
            self._local(InferenceResult.local_failure(source, f"{source}: the video has no readable frames"))
        elif read < reader.frame_count:
            # The container promised more frames than the file holds: the missing part is a
            # failure (one record), not a silent success.
            missing = reader.frame_count - read
            self._add_total(1 - missing)
            self._local(
                InferenceResult.local_failure(
                    source,
                    f"{source}: the video ended after {read} of its {reader.frame_count} frames "
                    f"({missing} missing: the file is truncated or corrupt)",
                )
            )
        elif read > declared:
            self._add_total(read - declared)  # the container under-counted: the frames were sent

    def _send(
        self,
        image: np.ndarray,
        source: str,
        frame: int | None,
        size: tuple[int, int] | None = None,
        read_span: tuple[float, float] | None = None,
    ) -> None:
        if frame is not None and (source, frame) in self._done:
            return  # ended by an earlier run (left out of the total)
        try:
            request_id = self.group.submit(
                image, self._on_result, source=source, frame=frame, source_size=size, read_span=read_span
            )
        except SessionClosedError:
            request_id = None
        if request_id is None:  # cancelled (or the session closed) before it could be sent
            self._count_not_started(1)

    # -- results ------------------------------------------------------------------------------
    def _local(self, result: InferenceResult) -> None:
        if result.source is not None and (result.source, result.frame) in self._done:
            if result.frame is None:
                self._add_total(-1)  # e.g. a video's failure: counted, not known to be done
            return  # ended by an earlier run
        self.group.deliver_local(result, self._on_result)

    def _add_total(self, n: int) -> None:
        self._total += n

    def _count_not_started(self, n: int) -> None:
        self.group.count_not_started(n)

    def _not_started(
        self,
        items: Sequence[InputItem],
        queue: collections.deque[tuple[InputItem, concurrent.futures.Future[_Read]]],
    ) -> None:
        left = sum(self._inputs_in(item) for item in items) + len(queue)
        queue.clear()
        self._count_not_started(left)

    def _reader_pool(self) -> contextlib.AbstractContextManager[Any]:
        if self.readers <= 0:
            if threading.current_thread() is threading.main_thread():
                # Ctrl-C raises KeyboardInterrupt at any bytecode of the main thread, e.g.
                # inside open() before a `with` holds the file, which is then left to the
                # garbage collector: read on a thread no signal interrupts, one at a time.
                return concurrent.futures.ThreadPoolExecutor(1, "image-reader")
            return contextlib.nullcontext(_InlineReader())
        return concurrent.futures.ThreadPoolExecutor(self.readers, "image-reader")


class _InlineReader:
    """The reader pool's interface, reading at once in the calling thread."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:
            future.set_exception(e)
        return future
