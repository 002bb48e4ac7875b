"""LiveRecorder: the live preview's recording as a state machine: OFF, ARMED (Record pressed
before the stream plays: it records from the stream's first frame) and RECORDING.

It takes every result of the run that plays, puts them back in frame order (results may come
out of order) and writes each with what the view shows of it (boxes past the sliders, masks,
top classes, trails) through `LiveRecording` (app.pipeline.recording), on that recorder's
thread. While a recording is armed or on, frames are decoded at full size (the run's
`DecodePlan`), and only those are recorded: the video has the source's resolution throughout.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.drawing.draw_list import FrozenTrail, TrailSource, frozen_trails
from app.drawing.style import AnnotationStyle
from app.inference.result import Detection, InferenceResult
from app.pipeline.display import DisplayMeter
from app.pipeline.frame_order import FrameOrder
from app.pipeline.live import LiveRun, StreamStats
from app.pipeline.live_decode import DecodePlan
from app.pipeline.recording import LiveRecording
from app.sources.frame import Frame
from app.ui.view.painter import render_rgb_in_place


class RecordingState(enum.StrEnum):
    OFF = "off"
    ARMED = "armed"  # Record pressed before Start: records from the stream's first frame
    RECORDING = "recording"


class LiveRecorder(QObject):
    state_changed = Signal(object)  # RecordingState

    def __init__(
        self,
        decode_plan: DecodePlan,
        executor: Executor,
        report: Callable[[str, bool], None],
        *,
        playing: Callable[[], bool],
        fps: Callable[[], float],
        settled: Callable[[], bool],
        frame_by_frame: Callable[[], bool],
        trails: Callable[[], Sequence[TrailSource]],
        visible: Callable[[InferenceResult], list[Detection]],
        style: Callable[[], AnnotationStyle],
    ) -> None:
        """From the live controller: `playing()` a run plays; `fps()` the rate to record at;
        `settled()` every request of the run has ended and its result was handed here (nothing
        older can still come); `frame_by_frame()` every frame is inferred (none dropped);
        `trails()` the tracks drawn over the newest frame; `visible(result)` its boxes past the
        sliders; `style()` the view's overlay style (mask opacity, skeleton)."""
        super().__init__()
        self.decode_plan, self._executor, self._report = decode_plan, executor, report
        self._playing, self._fps, self._settled = playing, fps, settled
        self._frame_by_frame, self._trails, self._visible, self._style = (
            frame_by_frame,
            trails,
            visible,
            style,
        )
        self.file = LiveRecording(paint=render_rgb_in_place)
        self.armed: Path | None = None  # a recording waiting for the stream's first frame
        self.since: float | None = None  # time.monotonic() of its first frame
        self._order: FrameOrder[tuple[Frame, InferenceResult, tuple[FrozenTrail, ...]]] | None = None
        self._state = RecordingState.OFF

    @property
    def state(self) -> RecordingState:
        """As last announced: a recording being closed is RECORDING until its files are written."""
        return self._state

    @property
    def active(self) -> bool:
        """The files are open (frames go in)."""
        return self.file.active

    # -- the user's Record / Stop ---------------------------------------------------------------
    def start(self, video_path: str | Path) -> None:
        """Record from the next annotated frame; before the stream plays, arm: it records from
        the stream's first frame (the frame rate is the source's, known once it is open)."""
        path = Path(video_path)
        if self.file.active or self.armed is not None:
            return
        if not self._playing():
            self.armed = path
            self.decode_plan.full = True  # from the stream's first frame
            self._set_state(RecordingState.ARMED)
            self._report(f"recording armed: {path.name} starts with the stream's first frame", False)
            return
        self._begin(path)

    async def stop(self, why: str = "") -> None:
        """Close the files (what is queued is written first) and say what was recorded."""
        if self.armed is not None and not self.file.active:
            path, self.armed = self.armed, None
            self.decode_plan.full = False
            self._set_state(RecordingState.OFF)
            self._report(f"recording to {path.name} cancelled before the stream started", False)
            return
        recording = self.file
        if self._order is not None:  # the stream stopped: what waited for older frames goes in
            for frame, done, trails in self._order.drain():
                self._write(frame, done, trails)
            self._order = None
        self.decode_plan.full = False  # the view's size again from the next frame
        summary = await asyncio.get_running_loop().run_in_executor(self._executor, recording.stop)
        self.since = None
        self._set_state(RecordingState.OFF)
        if summary:
            # Not in parentheses: that would read as raw detail and be left out of the status bar.
            early = f"; the stream stopped: {why}" if why and summary.ok else ""
            self._report(summary.text + early, not summary.ok)

    def disarm(self, why: str) -> None:
        """An armed recording whose stream never delivered a frame: say so, nothing is written."""
        if self.armed is None:
            return
        path, self.armed = self.armed, None
        self.decode_plan.full = False
        self._set_state(RecordingState.OFF)
        self._report(f"nothing recorded to {path.name}: {why}", True)

    def drop_armed(self) -> None:
        """The viewer closes: an armed recording is forgotten without a word."""
        self.armed = None

    # -- the stream's results (GUI thread) -----------------------------------------------------------
    def stream_started(self) -> None:
        """The run's first result: an armed recording begins with the stream's first frame."""
        if self.armed is not None:
            path, self.armed = self.armed, None
            self._begin(path, first=0)

    def record(self, frame: Frame, result: InferenceResult) -> None:
        """Into the recording in frame order. A frame decoded smaller (before the recording
        asked for full size) is left out: the video has the source's resolution throughout."""
        if not self.file.active or self._order is None or frame.reduced:
            return
        trails = frozen_trails(self._trails()) if result.ok else ()
        item = (frame, result, trails) if result.ok else None
        for ready, done, drawn_trails in self._order.push(frame.index, item, self._settled()):
            self._write(ready, done, drawn_trails)

    # -- inside ----------------------------------------------------------------------------------------
    def _begin(self, path: Path, first: int | None = None) -> None:
        """first: the first frame to record (0: an armed recording, from the stream's start;
        None: from the next result)."""
        self._order = FrameOrder(first, consecutive=self._frame_by_frame())
        try:
            self.file.start(path, self._fps())
        except ValueError as e:
            self._report(str(e), True)
            self.decode_plan.full = False
            self._set_state(RecordingState.OFF)
            return
        # Recorded at the source's resolution: frames are decoded at full size meanwhile.
        self.decode_plan.full = True
        self.since = time.monotonic()
        self._set_state(RecordingState.RECORDING)
        self._report(f"recording to {path.name} at the source's full resolution", False)

    def _write(self, frame: Frame, result: InferenceResult, trails: tuple[FrozenTrail, ...] = ()) -> None:
        # What the view shows of that frame, in the view's style (its mask opacity and skeleton).
        self.file.write(frame, self._visible(result), result.masks, result.classes, self._style(), trails)

    def _set_state(self, state: RecordingState) -> None:
        self._state = state
        self.state_changed.emit(state)


def record_fps(live: LiveRun | None, frame_by_frame: bool) -> float:
    """The recording's frame rate. Frame by frame, every frame is recorded: the source's rate.
    Live, the rate frames are inferred at once it is known (frames are dropped), else the
    source's."""
    if live is None:
        return 30.0
    stats = live.stats()
    source = stats.capture.source_fps
    if frame_by_frame and source > 0:
        return source
    if stats.stream is not None and stats.stream.inference_fps >= 1.0:
        return round(stats.stream.inference_fps)
    return source or 30.0


def settled(stream: StreamStats | None, live: LiveRun | None, meter: DisplayMeter) -> bool:
    """No request unfinished (an answered one may still be decoding) and every result received
    by the GUI: nothing older can still come (the recording's frame order). `stream`: the run's
    figures (the last run's once it stopped), `live`: the run playing (None: none)."""
    unfinished = live.unfinished() if live is not None else 0
    return stream is not None and unfinished == 0 and stream.completed <= meter.results
