"""LiveController: the live preview of one source (camera, video file, stream URL).

Owns the LiveCapture (its own thread, newest frame only) and the StreamInference
(at most N requests in flight for this stream) of the current session. Results come
back through the viewer's one ResultBridge; `on_result` (GUI thread) keeps only the
newest and draws it on the next pass of the event loop, so a burst of results costs
one paint. Every displayed picture is the frame its boxes were computed on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal

from app.inference.result import Detection, InferenceResult
from app.inference.session import TritonSession
from app.inference.stream import StreamInference, StreamStats
from app.sources.cameras import parse_source
from app.sources.frame import Frame
from app.sources.live import LiveCapture, Opener
from app.ui.filtering import refilter
from app.ui.image_view import ImageView
from app.ui.live_recording import LiveRecording
from app.ui.live_stats import DisplayMeter, DisplayStats
from app.ui.stats_panel import StatsPanel, format_ms
from app.ui.tasks import TaskSet
from app.ui.thresholds import ThresholdsWidget

log = logging.getLogger(__name__)

STATS_INTERVAL_MS = 250
ERROR_REPORT_INTERVAL_S = 2.0  # a model failing on every frame: one banner update per 2 s
CAPTURE_STOP_TIMEOUT_S = 2.0
FINISH_TIMEOUT_S = 30.0  # a file ended: wait at most this long for its last results
SCREENSHOT_FRAMES = 30  # --screenshot with --camera: after this many annotated frames


@dataclass
class LiveOptions:
    max_in_flight: int = 2
    frame_by_frame: bool = False  # files only: every frame inferred, nothing dropped (not real time)
    loop: bool = False  # files only: start again at the end
    resolution: tuple[int, int] | None = None  # cameras only; None = the driver's default


class LiveTag:
    """The `tag` of a live request: the frame (drawn with the result) and the run it belongs to.
    Offered to StreamInference in place of the frame (same index/image/source)."""

    __slots__ = ("frame", "run")

    def __init__(self, frame: Frame, run: int) -> None:
        self.frame = frame
        self.run = run

    @property
    def index(self) -> int:
        return self.frame.index

    @property
    def image(self) -> np.ndarray:
        return self.frame.image

    @property
    def source(self) -> str:
        return self.frame.source


def source_label(source: int | str) -> str:
    if isinstance(source, int):
        return f"camera {source}"
    return source if "://" in source else Path(source).name


class LiveController(QObject):
    """States: idle, waiting (for a server), starting, playing, paused, ended, failed, stopped."""

    state_changed = Signal(str, str)  # state, detail
    frame_shown = Signal(int, float)  # frame index, capture-to-display latency (ms)
    recording_changed = Signal(bool)
    # Emitted on the capture thread; this object lives on the GUI thread, so it is queued there.
    _capture_event = Signal(int, str, str)  # run, "error" | "end", message

    def __init__(
        self,
        view: ImageView,
        thresholds: ThresholdsWidget,
        stats_panel: StatsPanel,
        executor: Executor,
        tasks: TaskSet,
        post: Callable[[InferenceResult], None],
        report: Callable[[str, bool], None],
        on_take_view: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.view, self.thresholds, self.stats_panel = view, thresholds, stats_panel
        self._executor = executor
        self._tasks = tasks
        self._post = post  # the bridge's post: results reach the GUI thread through it
        self._report = report
        self._on_take_view = on_take_view
        self.options = LiveOptions()
        self.source: int | str | None = None
        self.state = "idle"
        self.error: str | None = None
        self.session: TritonSession | None = None
        self.capture: LiveCapture | None = None
        self.stream: StreamInference | None = None
        self.meter = DisplayMeter()
        self.recording = LiveRecording(executor, tasks, report)
        self.opener: Opener | None = None  # how LiveCapture opens sources (a seam for tests)
        self._run = 0  # bumped by every start/stop: results of an older run are not drawn
        self._pending: InferenceResult | None = None  # newest result not drawn yet
        self._pending_index = -1
        self._shown: InferenceResult | None = None
        self._shown_index = -1
        self._last_error_report = 0.0
        self._owns_view = False
        self._releasing = 0  # releases (capture thread joins) still running on the executor
        self._capture_event.connect(self._on_capture_event, Qt.ConnectionType.QueuedConnection)
        self._paint_timer = QTimer(self)
        self._paint_timer.setSingleShot(True)
        self._paint_timer.setInterval(0)  # after the queued results already waiting: coalesces bursts
        self._paint_timer.timeout.connect(self._paint)
        self._stats_timer = QTimer(self)
        self._stats_timer.setInterval(STATS_INTERVAL_MS)
        self._stats_timer.timeout.connect(self.update_stats_panel)
        thresholds.changed.connect(self._refilter)

    # -- public (GUI thread) --------------------------------------------------------------
    def open_text(self, text: str) -> bool:
        """A camera index, file or URL typed by the user; False (and a banner) if it is not one."""
        try:
            source = parse_source(text)
        except ValueError as e:
            self._fail(f"cannot open {text!r}: {e}")
            return False
        self.open(source)
        return True

    def open(self, source: int | str) -> None:
        """Play `source` (replacing what plays); starts once a session is there."""
        self.source = source
        self._tasks.spawn(self._restart(), name="live start")

    def start(self) -> None:
        """Start button: resume when paused, else (re)start the current source."""
        if self.state == "paused" and self.capture is not None:
            self.capture.resume()
            self._set_state("playing", self._describe())
        elif self.source is not None and self.state not in ("playing", "starting"):
            self._tasks.spawn(self._restart(), name="live start")

    def pause(self) -> None:
        if self.capture is not None and self.state == "playing":
            self.capture.pause()
            self._set_state("paused", self._describe())

    def stop(self) -> None:
        self._tasks.spawn(self._stop("stopped"), name="live stop")

    @property
    def active(self) -> bool:
        return self.capture is not None

    @property
    def idle(self) -> bool:
        """Nothing plays and every capture thread has ended (the device is released)."""
        return self.capture is None and self._releasing == 0

    def screenshot_ready(self) -> bool:
        """--screenshot: enough annotated frames shown, the source failed, or a short file ended."""
        if self.error is not None or self.meter.shown >= SCREENSHOT_FRAMES:
            return True
        return self.state == "ended" and self.idle

    def set_max_in_flight(self, value: int) -> None:
        self.options.max_in_flight = max(1, int(value))
        if self.stream is not None:
            self.stream.max_in_flight = self.options.max_in_flight  # applies at once

    def set_session(self, session: TritonSession | None) -> None:
        """The viewer's session changed: stop feeding the old one, feed the new one."""
        old, self.stream = self.stream, None
        self.session = session
        if old is not None:
            # Cancels the old session's requests (each still ends once, as cancelled).
            self._tasks.spawn(self._in_executor(old.stop), name="live stream stop")
        if session is None:
            return
        if self.capture is not None:
            self.stream = self._new_stream(session)
        elif self.state == "waiting":
            self._tasks.spawn(self._restart(), name="live start")

    async def shutdown(self) -> None:
        """The window closes: stop the stream, release the capture, close the recording."""
        await self._stop("stopped", quiet=True)

    # -- results (GUI thread, from the bridge) ---------------------------------------------------
    def on_result(self, result: InferenceResult) -> bool:
        """True if `result` belongs to a live stream (then it is handled here)."""
        tag = result.tag
        if not isinstance(tag, LiveTag):
            return False
        if tag.run != self._run:
            return True  # a stopped run's (cancelled) request: logged, not drawn
        self.meter.result()
        if not result.ok:
            self._report_error(result)
            return True
        self.recording.write(tag.frame, self._visible(result), self._record_fps())
        if tag.index <= self._shown_index:
            return True  # arrived after a newer frame was drawn: never step back in time
        if self._pending is not None:
            self.meter.coalesced += 1  # two results between paints: only the newer is drawn
            if tag.index < self._pending_index:
                return True
        self._pending, self._pending_index = result, tag.index
        if not self._paint_timer.isActive():
            self._paint_timer.start()
        return True

    def _paint(self) -> None:
        result, self._pending = self._pending, None
        if result is None:
            return
        tag = result.tag
        assert isinstance(tag, LiveTag)
        if not self._owns_view:
            self._owns_view = True
            if self._on_take_view is not None:
                self._on_take_view()
        self.view.set_image(tag.frame.image, self._visible(result), result.masks, result.classes)
        self._shown = result
        self._shown_index = tag.index
        age_ms = self.meter.drawn(tag.frame.timestamp)
        self.frame_shown.emit(tag.index, age_ms)

    def _visible(self, result: InferenceResult) -> list[Detection]:
        return refilter(result.detections, self.thresholds.score(), self.thresholds.iou())

    def _refilter(self, *_args: object) -> None:
        if self._owns_view and self._shown is not None:
            self.view.set_detections(self._visible(self._shown))

    def _report_error(self, result: InferenceResult) -> None:
        now = time.monotonic()
        if now - self._last_error_report >= ERROR_REPORT_INTERVAL_S:
            self._last_error_report = now
            self._report(f"{result.source} frame {result.frame}: {result.error}", True)

    # -- statistics --------------------------------------------------------------------------------
    def stream_stats(self) -> StreamStats | None:
        return None if self.stream is None else self.stream.stats()

    def display_stats(self) -> DisplayStats:
        return self.meter.stats()

    def update_stats_panel(self) -> None:
        d = self.meter.stats()
        s = self.stream_stats()
        panel = self.stats_panel
        capture_fps = self.capture.stats().fps if self.capture is not None else 0.0
        panel.set_extra("capture fps", f"{capture_fps:.1f}")
        panel.set_extra("inference fps", f"{s.inference_fps:.1f}" if s else "0.0")
        if s is not None:
            pct = 100.0 * s.dropped / s.offered if s.offered else 0.0
            panel.set_extra("dropped frames", f"{s.dropped} ({pct:.0f}%)")
        panel.set_extra("display fps", f"{d.display_fps:.1f}")
        panel.set_extra("capture→display p50", format_ms(d.latency_p50_ms))
        panel.set_extra("capture→display p95", format_ms(d.latency_p95_ms))

    def _record_fps(self) -> float:
        s = self.stream_stats()
        if s is not None and s.inference_fps >= 1.0:
            return round(s.inference_fps)
        source_fps = self.capture.stats().source_fps if self.capture is not None else 0.0
        return source_fps or 30.0

    # -- recording -----------------------------------------------------------------------------------
    def start_recording(self, video_path: str | Path) -> None:
        self.recording.start(Path(video_path))
        self.recording_changed.emit(True)

    async def stop_recording(self) -> None:
        summary = await self.recording.stop()
        self.recording_changed.emit(False)
        if summary:
            self._report(summary, not summary.startswith("recorded "))

    # -- start / stop --------------------------------------------------------------------------------
    async def _restart(self) -> None:
        await self._stop("stopped", quiet=True)
        source = self.source
        if source is None:
            return
        if self.session is None:
            self._set_state("waiting", f"{source_label(source)} will start once connected")
            return
        self._run += 1
        run = self._run
        self.error = None
        self.meter = DisplayMeter()
        self._shown, self._shown_index, self._pending = None, -1, None
        opts = self.options
        self.stream = self._new_stream(self.session)
        self.capture = LiveCapture(
            source,
            on_frame=functools.partial(self._offer, run),
            on_error=lambda message: self._capture_event.emit(run, "error", message),
            on_end=lambda: self._capture_event.emit(run, "end", ""),
            resolution=opts.resolution,
            realtime=not opts.frame_by_frame,
            loop=opts.loop,
            opener=self.opener,
        )
        self.capture.start()  # returns at once: opening happens on the capture thread
        self._stats_timer.start()
        self._set_state("playing", self._describe())

    def _new_stream(self, session: TritonSession) -> StreamInference:
        return StreamInference(
            session,
            self._post,
            max_in_flight=self.options.max_in_flight,
            drop_when_busy=not self.options.frame_by_frame,
        )

    def _offer(self, run: int, frame: Frame) -> None:
        # Capture thread: hand off only. Reads self.stream once (replaced atomically on the GUI thread).
        stream = self.stream
        if stream is not None and run == self._run:
            stream.offer(LiveTag(frame, run))

    async def _stop(self, state: str, quiet: bool = False) -> None:
        self._run += 1  # from now on this run's results are not drawn
        capture, self.capture = self.capture, None
        stream, self.stream = self.stream, None
        self._pending = None
        if self.recording.active:
            await self.stop_recording()
        if capture is not None or stream is not None:
            self._stats_timer.stop()
            self.update_stats_panel()
            self._releasing += 1
            try:
                await self._in_executor(functools.partial(release, stream, capture))
            finally:
                self._releasing -= 1
        if not quiet and self.capture is None:  # (unless a new start came in meanwhile)
            self._set_state(state, self._describe())

    async def _in_executor(self, fn: Callable[[], object]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _on_capture_event(self, run: int, kind: str, message: str) -> None:
        if run != self._run:
            return
        if kind == "error":
            self._fail(message)
            self._tasks.spawn(self._stop("failed", quiet=True), name="live stop")
        else:
            self._set_state("ended", f"{self._describe()}: end of the file")
            self._tasks.spawn(self._finish_file(run), name="live end")

    async def _finish_file(self, run: int) -> None:
        """The file ended: let the last results come back (and be drawn), then release everything."""
        stream = self.stream
        deadline = time.monotonic() + FINISH_TIMEOUT_S
        # Results still in flight, or finished but still queued in the bridge for this thread.
        while (
            stream is not None
            and run == self._run
            and (stream.stats().in_flight > 0 or stream.stats().completed > self.meter.results)
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(0.02)
        if run == self._run:
            await self._stop("ended", quiet=True)

    def _fail(self, message: str) -> None:
        self.error = message
        self._report(message, True)
        self._set_state("failed", message)

    def _describe(self) -> str:
        if self.source is None:
            return ""
        mode = " · frame by frame" if self.options.frame_by_frame else ""
        return f"{source_label(self.source)}{mode}"

    def _set_state(self, state: str, detail: str) -> None:
        self.state = state
        self.state_changed.emit(state, detail)


def release(stream: StreamInference | None, capture: LiveCapture | None) -> None:
    """Executor thread: stop the stream first (frees a capture thread waiting in offer() in
    frame-by-frame mode), then stop the capture, which releases the device on its own thread."""
    if stream is not None:
        stream.stop()
    if capture is not None and not capture.stop(CAPTURE_STOP_TIMEOUT_S):
        log.warning("%s: the capture thread is still blocked in the backend", capture.spec.label)
