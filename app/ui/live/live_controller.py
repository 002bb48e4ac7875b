"""LiveController: the live preview's GUI side over `app.pipeline.live.LiveRun`.

The run (capture thread -> LiveJob -> session) is Qt-free. Its results and events come
back through the bridge, bound to the run that produced them, so a stopped run's late
results are counted and never drawn. `on_result` keeps only the newest result and draws
it on the next pass of the event loop (superqt's throttler, at 0 ms): a burst of results costs
one paint. Every
displayed picture is the frame its boxes were computed on. When a file ends, the run's
"drained" (after its last result, through the same bridge) releases the capture.

Frames are decoded on the capture thread, no bigger than the view shows them (`LiveDetail`
keeps the run's `DecodePlan` told), into a buffer the view draws without copying; while a
recording (`LiveRecorder`, app/ui/live/recording.py) is armed or on they are decoded at full
size, and the recording takes only those. The panel's live rows: app/ui/live/live_rows.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from superqt.utils import QSignalThrottler

from app.drawing.draw_list import TrailSource
from app.inference.core.session import TritonSession
from app.inference.decoding.filtering import refilter
from app.inference.result import Detection, InferenceResult
from app.pipeline.display import DisplayMeter, DisplayStats
from app.pipeline.live import (
    LiveEvent,
    LiveOptions,
    LiveRun,
    LiveState,
    LiveStats,
    StreamStats,
    frame_of,
)
from app.pipeline.live_decode import DecodePlan
from app.sources.cameras import parse_source
from app.sources.frame import Frame
from app.sources.live import Opener
from app.ui.analysis.stats_panel import StatsPanel
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.live.live_detail import LiveDetail
from app.ui.live.live_rows import show_live_rows
from app.ui.live.recording import LiveRecorder, record_fps, settled
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget

log = logging.getLogger(__name__)

ERROR_REPORT_INTERVAL_S = 2.0  # a model failing on every frame: one banner update per 2 s
CAPTURE_STOP_TIMEOUT_S = 2.0
SCREENSHOT_FRAMES = 30  # --screenshot with --camera: after this many annotated frames


def source_label(source: int | str) -> str:
    if isinstance(source, int):
        return f"camera {source}"
    return source if "://" in source else Path(source).name


class LiveController(QObject):
    state_changed = Signal(object, str)  # LiveState, detail
    frame_shown = Signal(int, float)  # frame index, capture-to-display latency (ms)
    result = Signal(object)  # every result of the live stream (GUI thread), for the log
    painted = Signal(object)  # the result just drawn (its frame in .tag), e.g. for track trails
    released = Signal()  # every capture thread has ended: `idle` may be True now
    view_taken = Signal()  # a stream's first frame is about to be drawn: the view is the stream's

    def __init__(
        self,
        view: ImageView,
        thresholds: ThresholdsWidget,
        stats_panel: StatsPanel,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
    ) -> None:
        super().__init__()
        self.view, self.thresholds, self.stats_panel = view, thresholds, stats_panel
        self._executor = executor
        self._tasks = tasks
        self._bridge = bridge
        self._report = report
        self.options = LiveOptions()
        self.source: int | str | None = None
        self.state = LiveState.IDLE
        self.error: str | None = None
        self.session: TritonSession | None = None
        self.live: LiveRun | None = None
        # The figures of the last run as it stopped (a file that ended, Stop): the panel keeps
        # showing what was counted, not zeros, until the next run starts.
        self.final_stats: LiveStats | None = None
        self.meter = DisplayMeter()
        self.decode_plan = DecodePlan()  # how big frames are decoded; kept across runs
        self.detail = LiveDetail(view, self.decode_plan, executor, tasks)
        self.recorder = LiveRecorder(
            self.decode_plan,
            executor,
            report,
            playing=lambda: self.live is not None,
            fps=lambda: record_fps(self.live, self.options.frame_by_frame),
            settled=lambda: settled(self.stream_stats(), self.live, self.meter),
            frame_by_frame=lambda: self.options.frame_by_frame,
            trails=lambda: self.trails_hook() if self.trails_hook is not None else (),
            visible=self._visible,
            style=view.overlay_style,
        )
        self.opener: Opener | None = None  # how the capture opens sources (a seam for tests)
        # Applied to every ok result before it is recorded or drawn (e.g. adds track ids).
        self.result_hook: Callable[[InferenceResult], InferenceResult] | None = None
        # The tracks whose trails the view draws over the frame just hooked (recorded with it).
        self.trails_hook: Callable[[], Sequence[TrailSource]] | None = None
        # Called with every ok result of the run playing once hooked (track ids on), drawn or
        # not, in the order received: the lines, zones and heat map count every frame.
        self.observers: list[Callable[[InferenceResult], None]] = []
        self._run = 0  # bumped by every start/stop: results of an older run are not drawn
        self._pending: InferenceResult | None = None  # newest result not drawn yet
        self.paint_started_s = 0.0  # when the last paint pass began (the X-ray's "paint" stage)
        self._pending_index = -1
        self._shown: InferenceResult | None = None
        self._shown_index = -1
        self._last_error_report = 0.0
        self._owns_view = False
        self._hidden = False  # its view is hidden: nothing is drawn (set_hidden)
        self._releasing = 0  # releases (capture thread joins) still running on the executor
        # At 0 ms, trailing: the paint comes after the queued results already waiting (a burst
        # of them costs one paint, of the newest).
        self._paint_pass = QSignalThrottler(QSignalThrottler.EmissionPolicy.Trailing, parent=self)
        self._paint_pass.setTimeout(0)
        self._paint_pass.triggered.connect(self._paint)
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
        self._tasks.spawn(self._user_stop(), name="live stop")

    async def _user_stop(self) -> None:
        await self._stop(LiveState.STOPPED)
        self.recorder.disarm("the stream was stopped before its first frame")

    def release_view(self) -> None:
        """The batch shows its images again: nothing more of this stream is drawn (the next
        stream takes the view back with its first frame)."""
        self._owns_view = False
        self._run += 1  # results still on their way from this run are logged, not drawn
        self._pending = None
        self.detail.shown(None)

    def forget_results(self) -> None:
        """The model changed: the frame shown keeps no box, mask or class of the old one (a
        stream that plays on draws the new model's results with its next frame)."""
        self._pending = None
        self._shown = None
        if self._owns_view:
            self.view.set_detections([])
            self.view.set_overlays(None, None)

    @property
    def has_source(self) -> bool:
        return self.source is not None

    @property
    def active(self) -> bool:
        return self.live is not None

    @property
    def idle(self) -> bool:
        """Nothing plays and every capture thread has ended (the device is released)."""
        return self.live is None and self._releasing == 0

    @property
    def paint_pending(self) -> bool:
        """A result waits for the next paint pass (nothing else of this stream can be drawn)."""
        return self._pending is not None

    @property
    def run_id(self) -> int:
        """The number of the run whose results are drawn (bumped by every start and stop)."""
        return self._run

    def screenshot_ready(self) -> bool:
        """--screenshot: enough annotated frames shown, the source failed, or a short file ended."""
        if self.error is not None or self.meter.shown >= SCREENSHOT_FRAMES:
            return True
        return self.state is LiveState.ENDED and self.idle

    def set_max_in_flight(self, value: int) -> None:
        self.options.max_in_flight = max(1, int(value))
        if self.live is not None:
            self.live.set_max_in_flight(self.options.max_in_flight)  # applies at once

    def set_loop(self, on: bool) -> None:
        self.options.loop = bool(on)
        if self.live is not None:
            self.live.set_loop(self.options.loop)  # applies at once

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
        self.recorder.drop_armed()
        await self._stop(LiveState.STOPPED, quiet=True)

    # -- results (GUI thread, from the bridge) ---------------------------------------------------
    def on_result(self, run: int, result: InferenceResult) -> None:
        """A result of run `run` (see `run_id`): logged whatever its run, drawn (on the next
        pass, newest first) only when `run` is the one playing."""
        self.result.emit(result)  # logged whatever its run
        if run != self._run:
            return  # a stopped run's (cancelled) request: logged, not drawn
        frame = frame_of(result)
        self.meter.result()
        self.recorder.stream_started()  # (an armed recording begins with the first result)
        if result.ok and self.result_hook is not None:
            result = self.result_hook(result)  # e.g. track ids, before it is recorded or drawn
        self.recorder.record(frame, result)
        if not result.ok:
            self._report_error(result)
            return
        for observe in self.observers:
            observe(result)
        if frame.index <= self._shown_index:
            return  # arrived after a newer frame was drawn: never step back in time
        if self._pending is not None:
            self.meter.coalesced += 1  # two results between paints: only the newer is drawn
            if frame.index < self._pending_index:
                return
        self._pending, self._pending_index = result, frame.index
        self._paint_pass.throttle()

    def _paint(self) -> None:
        self.paint_started_s = time.monotonic()
        result, self._pending = self._pending, None
        if result is None:
            return
        frame = frame_of(result)
        if not self._owns_view:
            self._owns_view = True
            self.view_taken.emit()
        self._shown = result
        self._shown_index = frame.index
        if self._hidden:
            return  # not drawn (nor counted as shown) until its view shows again
        self._draw(result, frame)
        self.detail.shown(frame)
        age_ms = self.meter.drawn(frame.timestamp)
        self.painted.emit(result)
        self.frame_shown.emit(frame.index, age_ms)

    def _draw(self, result: InferenceResult, frame: Frame) -> None:
        # The display buffer is drawn as it is (no copy); the scene stays in source pixels.
        picture = frame.display if frame.display is not None else frame.image
        size = frame.original_size
        self.view.set_image(picture, self._visible(result), result.masks, result.classes, size=size)

    def set_view(self, view: ImageView) -> None:
        """Draw into `view` from the next frame on, and the frame shown there now (the wall's
        focus: a tile's stream in the single view, and back to its tile). Frames are decoded
        for what that view shows."""
        if view is self.view:
            return
        self.detail.close()
        self.view = view
        self.detail = LiveDetail(view, self.decode_plan, self._executor, self._tasks)
        self._redraw()

    def set_hidden(self, hidden: bool) -> None:
        """Its view is hidden (another stream of the wall has the focus): frames are decoded for
        the model alone and not drawn; shown again, the newest frame is drawn at once."""
        self._hidden = hidden
        self.detail.suspend(hidden)
        if not hidden:
            self._redraw()

    def _redraw(self) -> None:
        shown = self._shown
        if shown is not None and not self._hidden:
            frame = frame_of(shown)
            self._draw(shown, frame)
            self.detail.shown(frame)

    @property
    def shown_result(self) -> InferenceResult | None:
        """The result drawn last (its frame in `.tag`), None before the first."""
        return self._shown

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
    def stats(self) -> LiveStats | None:
        """The run playing, else the last one's figures as it stopped (None: never played)."""
        return self.live.stats() if self.live is not None else self.final_stats

    def stream_stats(self) -> StreamStats | None:
        stats = self.stats()
        return None if stats is None else stats.stream

    def display_stats(self) -> DisplayStats:
        return self.meter.stats()

    def update_stats_panel(self) -> None:
        """The live stream's own rows, shown under the live scope's figures."""
        stream = self.stream_stats()
        capture_fps = self.live.stats().capture.fps if self.live is not None else 0.0
        show_live_rows(self.stats_panel, self.meter.stats(), stream, capture_fps)

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
        self.final_stats = None
        self.meter = DisplayMeter()
        self._shown, self._shown_index, self._pending = None, -1, None
        wrap = self._bridge.wrap
        self.live = LiveRun(
            source,
            self.session,
            on_result=wrap(functools.partial(self.on_result, run)),
            on_event=wrap(functools.partial(self._on_event, run)),
            options=LiveOptions(**vars(self.options)),
            opener=self.opener,
            # Posted after the run's last result: when it runs here, every result was shown.
            on_drained=wrap(functools.partial(self._on_drained, run)),
            decode_plan=self.decode_plan,
        )
        self.live.start()  # returns at once: opening happens on the capture thread
        self._set_state(LiveState.PLAYING, self._describe())

    async def _stop(self, state: LiveState, quiet: bool = False, why: str = "") -> None:
        self._run += 1  # from now on this run's results are not drawn
        live, self.live = self.live, None
        self._pending = None
        if self.recorder.active:
            await self.recorder.stop(why)
        if live is not None:
            self._releasing += 1
            job = live.job  # its figures outlive the run (stop() lets it go)
            try:
                stopped = await asyncio.get_running_loop().run_in_executor(
                    self._executor, functools.partial(live.stop, CAPTURE_STOP_TIMEOUT_S)
                )
                self.final_stats = LiveStats(live.capture.stats(), job.stats() if job is not None else None)
                if not stopped:
                    log.warning(
                        "%s: the capture thread is still blocked in the backend", live.capture.spec.label
                    )
            finally:
                self._releasing -= 1
                if self._releasing == 0:
                    self.released.emit()
        if not quiet and self.live is None:  # (unless a new start came in meanwhile)
            self._set_state(state, self._describe())

    def _on_event(self, run: int, event: LiveEvent, message: str) -> None:
        if run != self._run:
            return
        if event is LiveEvent.ERROR:
            self._fail(message)
            self.recorder.disarm(f"the source failed before its first frame ({message})")
            self._tasks.spawn(self._stop(LiveState.FAILED, quiet=True, why=message), name="live stop")
        else:
            self._set_state(LiveState.ENDED, f"{self._describe()}: end of the file")

    def _on_drained(self, run: int) -> None:
        """The file ended and its last result has been handled here: release everything."""
        if run == self._run and self.state is LiveState.ENDED:
            self._paint()  # the last result, should its paint pass not have come yet
            self._tasks.spawn(self._finish_file(run), name="live end")

    async def _finish_file(self, run: int) -> None:
        if run == self._run:
            await self._stop(LiveState.ENDED, quiet=True)
            self.recorder.disarm("the video ended before its first annotated frame")

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
        self.state_changed.emit(state, detail)
