"""LiveController: the live preview's GUI side over `app.pipeline.live.LiveRun`.

The run (capture thread -> LiveJob -> session) is Qt-free. Its results and events come
back through the bridge, bound to the run that produced them, so a stopped run's late
results are counted and never drawn. `_on_result` keeps only the newest result and draws
it on the next pass of the event loop: a burst of results costs one paint. Every
displayed picture is the frame its boxes were computed on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from app.inference.filtering import refilter
from app.inference.result import Detection, InferenceResult
from app.inference.session import TritonSession
from app.pipeline.display import DisplayMeter, DisplayStats
from app.pipeline.live import LiveEvent, LiveOptions, LiveRun, LiveState, StreamStats
from app.pipeline.recording import LiveRecording
from app.sources.cameras import parse_source
from app.sources.frame import Frame
from app.sources.live import Opener
from app.ui.bridge import GuiBridge
from app.ui.image_view import ImageView
from app.ui.stats_panel import StatsPanel, format_ms
from app.ui.tasks import TaskSet
from app.ui.thresholds import ThresholdsWidget

log = logging.getLogger(__name__)

STATS_INTERVAL_MS = 250
ERROR_REPORT_INTERVAL_S = 2.0  # a model failing on every frame: one banner update per 2 s
CAPTURE_STOP_TIMEOUT_S = 2.0
FINISH_TIMEOUT_S = 30.0  # a file ended: wait at most this long for its last results
SCREENSHOT_FRAMES = 30  # --screenshot with --camera: after this many annotated frames


def source_label(source: int | str) -> str:
    if isinstance(source, int):
        return f"camera {source}"
    return source if "://" in source else Path(source).name


class LiveController(QObject):
    state_changed = Signal(str, str)  # LiveState, detail
    frame_shown = Signal(int, float)  # frame index, capture-to-display latency (ms)
    recording_changed = Signal(bool)
    result = Signal(object)  # every result of the live stream (GUI thread), for the log
    painted = Signal(object)  # the result just drawn (its frame in .tag), e.g. for track trails

    def __init__(
        self,
        view: ImageView,
        thresholds: ThresholdsWidget,
        stats_panel: StatsPanel,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
        on_take_view: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.view, self.thresholds, self.stats_panel = view, thresholds, stats_panel
        self._executor = executor
        self._tasks = tasks
        self._bridge = bridge
        self._report = report
        self._on_take_view = on_take_view
        self.options = LiveOptions()
        self.source: int | str | None = None
        self.state = LiveState.IDLE
        self.error: str | None = None
        self.session: TritonSession | None = None
        self.live: LiveRun | None = None
        self.meter = DisplayMeter()
        self.recording = LiveRecording()
        self.opener: Opener | None = None  # how the capture opens sources (a seam for tests)
        # Applied to every ok result before it is recorded or drawn (e.g. adds track ids).
        self.result_hook: Callable[[InferenceResult], InferenceResult] | None = None
        self._run = 0  # bumped by every start/stop: results of an older run are not drawn
        self._pending: InferenceResult | None = None  # newest result not drawn yet
        self._pending_index = -1
        self._shown: InferenceResult | None = None
        self._shown_index = -1
        self._last_error_report = 0.0
        self._owns_view = False
        self._releasing = 0  # releases (capture thread joins) still running on the executor
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
        if self.state is LiveState.PAUSED and self.live is not None:
            self.live.resume()
            self._set_state(LiveState.PLAYING, self._describe())
        elif self.source is not None and self.state is not LiveState.PLAYING:
            self._tasks.spawn(self._restart(), name="live start")

    def pause(self) -> None:
        if self.live is not None and self.state is LiveState.PLAYING:
            self.live.pause()
            self._set_state(LiveState.PAUSED, self._describe())

    def stop(self) -> None:
        self._tasks.spawn(self._stop(LiveState.STOPPED), name="live stop")

    @property
    def active(self) -> bool:
        return self.live is not None

    @property
    def idle(self) -> bool:
        """Nothing plays and every capture thread has ended (the device is released)."""
        return self.live is None and self._releasing == 0

    def screenshot_ready(self) -> bool:
        """--screenshot: enough annotated frames shown, the source failed, or a short file ended."""
        if self.error is not None or self.meter.shown >= SCREENSHOT_FRAMES:
            return True
        return self.state is LiveState.ENDED and self.idle

    def set_max_in_flight(self, value: int) -> None:
        self.options.max_in_flight = max(1, int(value))
        if self.live is not None:
            self.live.set_max_in_flight(self.options.max_in_flight)  # applies at once

    def set_session(self, session: TritonSession | None) -> None:
        """The viewer's session changed: stop feeding the old one, feed the new one."""
        self.session = session
        if self.live is not None:
            old = self.live.set_session(session)
            if old is not None:
                old.stop()  # cancels the old session's requests; returns at once
        elif session is not None and self.state is LiveState.WAITING:
            self._tasks.spawn(self._restart(), name="live start")

    async def shutdown(self) -> None:
        """The window closes: stop the stream, release the capture, close the recording."""
        await self._stop(LiveState.STOPPED, quiet=True)

    # -- results (GUI thread, from the bridge) ---------------------------------------------------
    def _on_result(self, run: int, result: InferenceResult) -> None:
        self.result.emit(result)  # logged whatever its run
        if run != self._run:
            return  # a stopped run's (cancelled) request: logged, not drawn
        frame: Frame = result.tag
        self.meter.result()
        if not result.ok:
            self._report_error(result)
            return
        if self.result_hook is not None:
            result = self.result_hook(result)
        self.recording.write(frame, self._visible(result))
        if frame.index <= self._shown_index:
            return  # arrived after a newer frame was drawn: never step back in time
        if self._pending is not None:
            self.meter.coalesced += 1  # two results between paints: only the newer is drawn
            if frame.index < self._pending_index:
                return
        self._pending, self._pending_index = result, frame.index
        if not self._paint_timer.isActive():
            self._paint_timer.start()

    def _paint(self) -> None:
        result, self._pending = self._pending, None
        if result is None:
            return
        frame: Frame = result.tag
        if not self._owns_view:
            self._owns_view = True
            if self._on_take_view is not None:
                self._on_take_view()
        self.view.set_image(frame.image, self._visible(result), result.masks, result.classes)
        self._shown = result
        self._shown_index = frame.index
        age_ms = self.meter.drawn(frame.timestamp)
        self.painted.emit(result)
        self.frame_shown.emit(frame.index, age_ms)

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
        return None if self.live is None else self.live.stats().stream

    def display_stats(self) -> DisplayStats:
        return self.meter.stats()

    def update_stats_panel(self) -> None:
        d = self.meter.stats()
        s = self.stream_stats()
        panel = self.stats_panel
        capture_fps = self.live.stats().capture.fps if self.live is not None else 0.0
        panel.set_extra("capture fps", f"{capture_fps:.1f}")
        panel.set_extra("inference fps", f"{s.inference_fps:.1f}" if s else "0.0")
        if s is not None:
            pct = 100.0 * s.dropped / s.offered if s.offered else 0.0
            panel.set_extra("dropped frames", f"{s.dropped} ({pct:.0f}%)")
        panel.set_extra("display fps", f"{d.display_fps:.1f}")
        panel.set_extra("capture→display p50", format_ms(d.latency_p50_ms))
        panel.set_extra("capture→display p95", format_ms(d.latency_p95_ms))

    def _record_fps(self) -> float:
        if self.live is None:
            return 30.0
        stats = self.live.stats()
        if stats.stream is not None and stats.stream.inference_fps >= 1.0:
            return round(stats.stream.inference_fps)
        return stats.capture.source_fps or 30.0

    # -- recording -----------------------------------------------------------------------------------
    def start_recording(self, video_path: str | Path) -> None:
        try:
            self.recording.start(Path(video_path), self._record_fps())
        except ValueError as e:
            self._report(str(e), True)
            self.recording_changed.emit(False)
            return
        self.recording_changed.emit(True)

    async def stop_recording(self) -> None:
        recording = self.recording
        summary = await asyncio.get_running_loop().run_in_executor(self._executor, recording.stop)
        self.recording_changed.emit(False)
        if summary:
            self._report(summary.text, not summary.ok)

    # -- start / stop --------------------------------------------------------------------------------
    async def _restart(self) -> None:
        await self._stop(LiveState.STOPPED, quiet=True)
        source = self.source
        if source is None:
            return
        if self.session is None:
            self._set_state(LiveState.WAITING, f"{source_label(source)} will start once connected")
            return
        self._run += 1
        run = self._run
        self.error = None
        self.meter = DisplayMeter()
        self._shown, self._shown_index, self._pending = None, -1, None
        wrap = self._bridge.wrap
        self.live = LiveRun(
            source,
            self.session,
            on_result=wrap(functools.partial(self._on_result, run)),
            on_event=wrap(functools.partial(self._on_event, run)),
            options=LiveOptions(**vars(self.options)),
            opener=self.opener,
        )
        self.live.start()  # returns at once: opening happens on the capture thread
        self._stats_timer.start()
        self._set_state(LiveState.PLAYING, self._describe())

    async def _stop(self, state: LiveState, quiet: bool = False) -> None:
        self._run += 1  # from now on this run's results are not drawn
        live, self.live = self.live, None
        self._pending = None
        if self.recording.active:
            await self.stop_recording()
        if live is not None:
            self._stats_timer.stop()
            self._releasing += 1
            try:
                stopped = await asyncio.get_running_loop().run_in_executor(
                    self._executor, functools.partial(live.stop, CAPTURE_STOP_TIMEOUT_S)
                )
                if not stopped:
                    log.warning(
                        "%s: the capture thread is still blocked in the backend", live.capture.spec.label
                    )
            finally:
                self._releasing -= 1
        if not quiet and self.live is None:  # (unless a new start came in meanwhile)
            self._set_state(state, self._describe())

    def _on_event(self, run: int, event: LiveEvent, message: str) -> None:
        if run != self._run:
            return
        if event is LiveEvent.ERROR:
            self._fail(message)
            self._tasks.spawn(self._stop(LiveState.FAILED, quiet=True), name="live stop")
        else:
            self._set_state(LiveState.ENDED, f"{self._describe()}: end of the file")
            self._tasks.spawn(self._finish_file(run), name="live end")

    async def _finish_file(self, run: int) -> None:
        """The file ended: let the last results come back (and be drawn), then release everything."""
        live = self.live
        deadline = time.monotonic() + FINISH_TIMEOUT_S
        # Results still in flight, or finished but still queued in the bridge for this thread.
        while live is not None and run == self._run and time.monotonic() < deadline:
            stats = live.stats().stream
            if stats is None or (stats.in_flight == 0 and stats.completed <= self.meter.results):
                break
            await asyncio.sleep(0.02)
        if run == self._run:
            await self._stop(LiveState.ENDED, quiet=True)

    def _fail(self, message: str) -> None:
        self.error = message
        self._report(message, True)
        self._set_state(LiveState.FAILED, message)

    def _describe(self) -> str:
        if self.source is None:
            return ""
        mode = " · frame by frame" if self.options.frame_by_frame else ""
        return f"{source_label(self.source)}{mode}"

    def _set_state(self, state: LiveState, detail: str) -> None:
        self.state = state
        self.state_changed.emit(state.value, detail)
