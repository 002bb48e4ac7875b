"""LiveController: the live preview's GUI side over `app.pipeline.live.LiveRun`.

The run (capture thread -> LiveJob -> session) is Qt-free. Its results and events come
back through the bridge, bound to the run that produced them, so a stopped run's late
results are counted and never drawn. `on_result` keeps only the newest result and draws
it on the next pass of the event loop: a burst of results costs one paint. Every
displayed picture is the frame its boxes were computed on. When a file ends, the run's
"drained" (after its last result, through the same bridge) releases the capture.

Frames are decoded on the capture thread, no bigger than the view shows them (`LiveDetail`
keeps the run's `DecodePlan` told), into a buffer the view draws without copying; while a
recording is armed or on they are decoded at full size, and the recording takes only those.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from app.drawing.draw_list import FrozenTrail, TrailSource, frozen_trails
from app.inference.core.session import TritonSession
from app.inference.decoding.filtering import refilter
from app.inference.result import Detection, InferenceResult
from app.pipeline.display import DisplayMeter, DisplayStats
from app.pipeline.frame_order import FrameOrder
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
from app.pipeline.recording import LiveRecording
from app.sources.cameras import parse_source
from app.sources.frame import Frame
from app.sources.live import Opener
from app.ui.analysis.scoped_stats import Scope
from app.ui.analysis.stats_panel import StatsPanel, format_ms
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.live.live_detail import LiveDetail
from app.ui.view.image_view import ImageView
from app.ui.view.painter import render_rgb_in_place
from app.ui.widgets.thresholds import ThresholdsWidget

log = logging.getLogger(__name__)

ERROR_REPORT_INTERVAL_S = 2.0  # a model failing on every frame: one banner update per 2 s
CAPTURE_STOP_TIMEOUT_S = 2.0
SCREENSHOT_FRAMES = 30  # --screenshot with --camera: after this many annotated frames


class RecordingState(enum.StrEnum):
    OFF = "off"
    ARMED = "armed"  # Record pressed before Start: records from the stream's first frame
    RECORDING = "recording"


LIVE_ROWS = (
    "Capture frames/s",
    "Inferred frames",
    "Dropped frames",
    "Display frames/s",
    "Display lag p50",
    "Display lag p95",
)


def source_label(source: int | str) -> str:
    if isinstance(source, int):
        return f"camera {source}"
    return source if "://" in source else Path(source).name


class LiveController(QObject):
    state_changed = Signal(object, str)  # LiveState, detail
    frame_shown = Signal(int, float)  # frame index, capture-to-display latency (ms)
    recording_changed = Signal(bool)  # armed or recording
    recording_state = Signal(object)  # RecordingState
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
        self.recording = LiveRecording(paint=render_rgb_in_place)
        self.armed: Path | None = None  # a recording waiting for the stream's first frame
        self.recording_since: float | None = None  # time.monotonic() of its first frame
        self._order: FrameOrder[tuple[Frame, InferenceResult, tuple[FrozenTrail, ...]]] | None = None
        self._recording = RecordingState.OFF
        self.opener: Opener | None = None  # how the capture opens sources (a seam for tests)
        # Applied to every ok result before it is recorded or drawn (e.g. adds track ids).
        self.result_hook: Callable[[InferenceResult], InferenceResult] | None = None
        # The tracks whose trails the view draws over the frame just hooked (recorded with it).
        self.trails_hook: Callable[[], Sequence[TrailSource]] | None = None
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
        self._disarm("the stream was stopped before its first frame")

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
        return self._paint_timer.isActive()

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
        self.armed = None
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
        if self.armed is not None:  # the stream's first result: an armed recording begins
            path, self.armed = self.armed, None
            self._begin_recording(path, first=0)
        if result.ok and self.result_hook is not None:
            result = self.result_hook(result)  # e.g. track ids, before it is recorded or drawn
        self._record(frame, result)
        if not result.ok:
            self._report_error(result)
            return
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
        frame = frame_of(result)
        if not self._owns_view:
            self._owns_view = True
            self.view_taken.emit()
        # The display buffer is drawn as it is (no copy); the scene stays in source pixels.
        picture = frame.display if frame.display is not None else frame.image
        size = frame.original_size
        self.view.set_image(picture, self._visible(result), result.masks, result.classes, size=size)
        self.detail.shown(frame)
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
    def stats(self) -> LiveStats | None:
        """The run playing, else the last one's figures as it stopped (None: never played)."""
        return self.live.stats() if self.live is not None else self.final_stats

    def stream_stats(self) -> StreamStats | None:
        stats = self.stats()
        return None if stats is None else stats.stream

    def display_stats(self) -> DisplayStats:
        return self.meter.stats()

    def update_stats_panel(self) -> None:
        """The live stream's own rows, shown under the live scope's figures (its Requests/s is
        the inferred frames per second: one request per frame)."""
        panel = self.stats_panel
        if panel.scope() is not Scope.LIVE:
            for name in LIVE_ROWS:
                panel.remove_extra(name)
            return
        d = self.meter.stats()
        stats = self.stats()
        s = stats.stream if stats is not None else None
        capture_fps = self.live.stats().capture.fps if self.live is not None else 0.0
        panel.set_extra(LIVE_ROWS[0], f"{capture_fps:.1f}", "Frames read from the source per second")
        inferred, dropped, offered = "0", "0", 0
        if s is not None:
            pct = 100.0 * s.dropped / s.offered if s.offered else 0.0
            inferred, offered = f"{s.completed} of {s.offered}", s.offered
            dropped = f"{s.dropped} ({pct:.0f}%)"
        panel.set_extra(
            LIVE_ROWS[1], inferred, "Frames whose request ended (of the frames captured), after the end too"
        )
        panel.set_extra(
            LIVE_ROWS[2],
            dropped,
            f"Frames not sent because the stream's requests in flight were all busy (of {offered} captured)",
        )
        panel.set_extra(LIVE_ROWS[3], f"{d.display_fps:.1f}", "Annotated frames drawn per second")
        lag = "From the frame's capture to its picture on screen (with its boxes)"
        panel.set_extra(LIVE_ROWS[4], format_ms(d.latency_p50_ms), lag)
        panel.set_extra(LIVE_ROWS[5], format_ms(d.latency_p95_ms), lag)

    def _record_fps(self) -> float:
        """Frame by frame, every frame is recorded: the source's rate. Live, the rate frames are
        inferred at once it is known (frames are dropped), else the source's."""
        if self.live is None:
            return 30.0
        stats = self.live.stats()
        source = stats.capture.source_fps
        if self.options.frame_by_frame and source > 0:
            return source
        if stats.stream is not None and stats.stream.inference_fps >= 1.0:
            return round(stats.stream.inference_fps)
        return source or 30.0

    def _record(self, frame: Frame, result: InferenceResult) -> None:
        """Into the recording in frame order (results may come out of order). A frame decoded
        smaller (before the recording asked for full size) is left out: the video has the
        source's resolution throughout."""
        if not self.recording.active or self._order is None or frame.reduced:
            return
        stats = self.stream_stats()
        # No request unfinished (an answered one may still be decoding) and every result
        # received here: nothing older can still come.
        live = self.live
        unfinished = live.unfinished() if live is not None else 0
        quiet = stats is not None and unfinished == 0 and stats.completed <= self.meter.results
        trails = frozen_trails(self.trails_hook()) if result.ok and self.trails_hook is not None else ()
        item = (frame, result, trails) if result.ok else None
        for ready, done, drawn_trails in self._order.push(frame.index, item, quiet):
            self._write_recorded(ready, done, drawn_trails)

    def _write_recorded(
        self, frame: Frame, result: InferenceResult, trails: tuple[FrozenTrail, ...] = ()
    ) -> None:
        # What the view shows of that frame: boxes past the sliders, masks, top classes, trails,
        # in the view's style (its mask opacity and skeleton).
        style = self.view.overlay_style()
        self.recording.write(frame, self._visible(result), result.masks, result.classes, style, trails)

    # -- recording -----------------------------------------------------------------------------------
    def start_recording(self, video_path: str | Path) -> None:
        """Record from the next annotated frame; before Start, arm: it records from the stream's
        first frame (the frame rate is the source's, known once it is open)."""
        path = Path(video_path)
        if self.recording.active or self.armed is not None:
            return
        if self.live is None:
            self.armed = path
            self.decode_plan.full = True  # from the stream's first frame
            self._recording_state(RecordingState.ARMED)
            self._report(f"recording armed: {path.name} starts with the stream's first frame", False)
            return
        self._begin_recording(path)

    def _begin_recording(self, path: Path, first: int | None = None) -> None:
        """first: the first frame to record (0: an armed recording, from the stream's start;
        None: from the next result)."""
        self._order = FrameOrder(first, consecutive=self.options.frame_by_frame)
        try:
            self.recording.start(path, self._record_fps())
        except ValueError as e:
            self._report(str(e), True)
            self.decode_plan.full = False
            self._recording_state(RecordingState.OFF)
            return
        # Recorded at the source's resolution: frames are decoded at full size meanwhile.
        self.decode_plan.full = True
        self.recording_since = time.monotonic()
        self._recording_state(RecordingState.RECORDING)
        self._report(f"recording to {path.name} at the source's full resolution", False)

    def _disarm(self, why: str) -> None:
        """An armed recording whose stream never delivered a frame: say so, nothing is written."""
        if self.armed is None:
            return
        path, self.armed = self.armed, None
        self.decode_plan.full = False
        self._recording_state(RecordingState.OFF)
        self._report(f"nothing recorded to {path.name}: {why}", True)

    async def stop_recording(self, why: str = "") -> None:
        """Close the files (what is queued is written first) and say what was recorded."""
        if self.armed is not None and not self.recording.active:
            path, self.armed = self.armed, None
            self.decode_plan.full = False
            self._recording_state(RecordingState.OFF)
            self._report(f"recording to {path.name} cancelled before the stream started", False)
            return
        recording = self.recording
        if self._order is not None:  # the stream stopped: what waited for older frames goes in
            for frame, done, trails in self._order.drain():
                self._write_recorded(frame, done, trails)
            self._order = None
        self.decode_plan.full = False  # the view's size again from the next frame
        summary = await asyncio.get_running_loop().run_in_executor(self._executor, recording.stop)
        self.recording_since = None
        self._recording_state(RecordingState.OFF)
        if summary:
            # Not in parentheses: that would read as raw detail and be left out of the status bar.
            early = f"; the stream stopped: {why}" if why and summary.ok else ""
            self._report(summary.text + early, not summary.ok)

    def recording_status(self) -> RecordingState:
        """As last announced: a recording being closed is RECORDING until its files are written."""
        return self._recording

    def _recording_state(self, state: RecordingState) -> None:
        self._recording = state
        self.recording_state.emit(state)
        self.recording_changed.emit(state is not RecordingState.OFF)

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
        if self.recording.active:
            await self.stop_recording(why)
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
            self._disarm(f"the source failed before its first frame ({message})")
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
            self._disarm("the video ended before its first annotated frame")

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
