"""The live preview's controls: a toolbar and a Live menu (plus File > Open camera/video/stream),
wired to a LiveController."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QSpinBox,
    QToolBar,
    QWidget,
)
from superqt.utils import signals_blocked

from app.pipeline.live import LiveState
from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController
from app.ui.live.recording import RecordingState
from app.ui.widgets.banner import split_detail
from app.ui.widgets.camera_picker import CameraPicker, ask_stream_url, ask_video_file
from app.ui.widgets.elided_label import ElidedLabel
from app.ui.widgets.overlays import RecordingMark

RESOLUTIONS: tuple[tuple[str, tuple[int, int] | None], ...] = (
    ("Camera default", None),
    ("640x480", (640, 480)),
    ("1280x720", (1280, 720)),
    ("1920x1080", (1920, 1080)),
)
MAX_IN_FLIGHT = 32
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".m4v")
STATE_TEXT = {
    LiveState.IDLE: "No live source",
    LiveState.WAITING: "Waiting for the server",
    LiveState.PLAYING: "Live",
    LiveState.PAUSED: "Paused",
    LiveState.ENDED: "Ended",
    LiveState.FAILED: "Failed",
    LiveState.STOPPED: "Stopped",
}


class LiveToolbar(QToolBar):
    """Start / Pause / Stop, in-flight limit, frame by frame, loop, resolution, Record."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Live", parent)
        self.setObjectName("LiveToolbar")  # saveState() needs names
        self.open_action = QAction("Open camera…", self)
        self.start_action = QAction("▶ Start", self)
        self.start_action.setShortcut(QKeySequence("F5"))
        self.pause_action = QAction("❚❚ Pause", self)
        self.pause_action.setShortcut(QKeySequence("Space"))
        self.stop_action = QAction("■ Stop", self)
        self.stop_action.setShortcut(QKeySequence("Shift+F5"))
        self.record_action = QAction("● Record…", self)
        self.record_action.setCheckable(True)
        self.record_action.setShortcut(QKeySequence("Ctrl+R"))
        self.has_source = False
        self.state = LiveState.IDLE
        self.in_flight = QSpinBox()
        self.in_flight.setRange(1, MAX_IN_FLIGHT)
        self.in_flight.setValue(2)
        self.in_flight.setToolTip(
            "At most this many requests in flight for the stream; frames arriving while they are "
            "all busy are dropped (live) so the picture never falls behind"
        )
        self.frame_by_frame = QCheckBox("Frame by frame")
        self.frame_by_frame.setToolTip(
            "Video files: infer every frame, drop nothing (slower than real time). Applies at the next Start."
        )
        self.loop = QCheckBox("Loop")
        self.loop.setToolTip("Video files: start again at the end (applies at once)")
        self.resolution = QComboBox()
        for text, size in RESOLUTIONS:
            self.resolution.addItem(text, size)
        self.resolution.setToolTip("Cameras: the capture resolution to ask for. Applies at the next Start.")
        # The lead of a long message, whole words only ("…" when the toolbar is narrow); the
        # whole message in the tooltip. It takes the toolbar's free width.
        self.state_label = ElidedLabel(STATE_TEXT[LiveState.IDLE])
        for action in (self.open_action, self.start_action, self.pause_action, self.stop_action):
            self.addAction(action)
        self.addSeparator()
        self.addWidget(QLabel(" In flight "))
        self.addWidget(self.in_flight)
        self.addWidget(self.frame_by_frame)
        self.addWidget(self.loop)
        self.addWidget(self.resolution)
        self.addAction(self.record_action)
        self.state_separator = self.addSeparator()  # (tracking goes before it: LiveUi)
        self.addWidget(self.state_label)
        self.set_state(LiveState.IDLE, "")

    def set_state(self, state: LiveState, detail: str) -> None:
        self.state = state
        title = STATE_TEXT[state]
        lead, _raw = split_detail(detail)
        self.state_label.setText(f" {title}: {lead}" if lead else f" {title}")
        self.state_label.setToolTip(detail)
        self._enable()

    def set_has_source(self, has: bool) -> None:
        self.has_source = has
        self._enable()

    def _enable(self) -> None:
        """Each control enabled only when it can do something; a disabled one says why."""
        state, has = self.state, self.has_source
        why_source = "Open a camera, a video or a stream first (Live > Open camera…)"
        start = has and state not in (LiveState.PLAYING, LiveState.WAITING)
        self.start_action.setEnabled(start)
        self.start_action.setToolTip(
            "Resume" if state is LiveState.PAUSED else ("Start the stream (F5)" if start else why_source)
        )
        self.pause_action.setEnabled(state in (LiveState.PLAYING, LiveState.PAUSED))
        self.pause_action.setToolTip(
            "Pause / resume (Space)" if self.pause_action.isEnabled() else "Nothing plays"
        )
        self.stop_action.setEnabled(
            state in (LiveState.PLAYING, LiveState.PAUSED, LiveState.WAITING, LiveState.ENDED)
        )
        recording = self.record_action.isChecked()
        self.record_action.setEnabled(has or recording)
        self.record_action.setToolTip(
            "Record the annotated stream (video) and its detections (JSON Lines); pressed before "
            "Start it records from the first frame (Ctrl+R)"
            if has or recording
            else why_source
        )


class LiveUi:
    """Builds the toolbar and menus on `window` and connects them to `live`."""

    def __init__(
        self,
        window: QMainWindow,
        file_menu: QMenu,
        view: QWidget,
        live: LiveController,
        executor: Executor,
        tasks: TaskSet,
        opened_dir: Callable[[], str],
        remember_record_dir: Callable[[str], None],
        video_dir: Callable[[], str] = lambda: "",
        remember_video_dir: Callable[[str], None] = lambda _folder: None,
    ) -> None:
        """`opened_dir()`: the folder last opened from (where the dialogs start otherwise);
        `remember_record_dir(folder)`: keeps a new recording folder remembered at once;
        `video_dir()` / `remember_video_dir(folder)`: the folder a video was last opened from."""
        self.video_dir, self.remember_video_dir = video_dir, remember_video_dir
        self.window, self.live = window, live
        self._executor, self._tasks = executor, tasks
        self.toolbar = bar = LiveToolbar(window)
        window.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.open_camera_action = QAction("Open &camera…", window)
        self.open_camera_action.setShortcut(QKeySequence("Ctrl+K"))
        self.open_video_action = QAction("Open &video…", window)
        self.open_stream_action = QAction("Open stream &URL…", window)
        self._insert_into_file_menu(file_menu)
        self.menu = menu = window.menuBar().addMenu("&Live")
        menu.setToolTipsVisible(True)  # disabled actions say why
        for action in (self.open_camera_action, self.open_video_action, self.open_stream_action):
            menu.addAction(action)
        menu.addSeparator()
        for action in (bar.start_action, bar.pause_action, bar.stop_action):
            menu.addAction(action)
        menu.addSeparator()
        menu.addAction(bar.record_action)
        self.picker: CameraPicker | None = None
        self.record_dir = ""  # the folder last recorded to (the viewer keeps it remembered)
        self.opened_dir, self.remember_record_dir = opened_dir, remember_record_dir

        bar.open_action.triggered.connect(self.open_camera)
        self.open_camera_action.triggered.connect(self.open_camera)
        self.open_video_action.triggered.connect(self.open_video)
        self.open_stream_action.triggered.connect(self.open_stream)
        bar.start_action.triggered.connect(self._start)
        bar.pause_action.triggered.connect(self._pause_or_resume)
        bar.stop_action.triggered.connect(live.stop)
        bar.record_action.triggered.connect(self._record_toggled)
        bar.in_flight.valueChanged.connect(live.set_max_in_flight)
        bar.frame_by_frame.toggled.connect(self.apply_options)
        bar.loop.toggled.connect(live.set_loop)  # applies to the file playing, at once
        bar.resolution.currentIndexChanged.connect(self.apply_options)
        live.state_changed.connect(self._state_changed)
        live.recorder.state_changed.connect(self._recording_changed)
        self.rec_mark = RecordingMark(view)

    def add_tracking(self, track: QAction) -> None:
        """Analyse > Track objects here too, where a stream is watched: the toolbar (short
        text) after Record, and the Live menu."""
        track.setIconText("Track")
        self.toolbar.insertAction(self.toolbar.state_separator, track)
        self.menu.addAction(track)

    def _state_changed(self, state: LiveState, detail: str) -> None:
        self.toolbar.has_source = self.live.has_source
        self.toolbar.set_state(state, detail)

    def _insert_into_file_menu(self, file_menu: QMenu) -> None:
        """After "Open folder…" (before the separator that follows it)."""
        actions = file_menu.actions()
        index = next((i for i, a in enumerate(actions) if a.isSeparator()), len(actions))
        before = actions[index] if index < len(actions) else None
        for action in (self.open_camera_action, self.open_video_action, self.open_stream_action):
            if before is None:
                file_menu.addAction(action)
            else:
                file_menu.insertAction(before, action)

    # -- choosing a source ---------------------------------------------------------------------
    def open_camera(self) -> None:
        if self.picker is not None:
            self.picker.raise_()
            return
        self.picker = picker = CameraPicker(self._executor, self._tasks, self.window)
        picker.source_chosen.connect(self.open_source)
        picker.finished.connect(self._picker_closed)
        picker.open()  # window-modal, without a nested event loop

    def _picker_closed(self, _result: int) -> None:
        if self.picker is not None:
            self.picker.deleteLater()
            self.picker = None

    def open_video(self) -> None:
        path = ask_video_file(self.window, self.video_dir() or self.opened_dir())
        if path:
            self.remember_video_dir(str(Path(path).parent))
            self.open_source(path)

    def open_stream(self) -> None:
        url = ask_stream_url(self.window)
        if url:
            self.open_source(url)

    def open_source(self, source: object) -> None:
        """Open what the user chose (a camera index, a video file, a stream URL) with the
        toolbar's options, as the Open dialogs do."""
        self.apply_options()
        if isinstance(source, int):
            self.live.open(source)
        else:
            self.live.open_text(str(source))

    # -- controls ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self.apply_options()
        if self.live.source is not None:
            self.live.start()

    def _pause_or_resume(self) -> None:
        if self.live.state is LiveState.PAUSED:
            self.live.start()
        else:
            self.live.pause()

    def apply_options(self, *_args: object) -> None:
        """The toolbar's options (frame by frame, loop, resolution, in flight) into the live
        controller's; frame by frame and resolution apply from the next start (loop and in
        flight also apply at once, through their own signals)."""
        bar, opts = self.toolbar, self.live.options
        opts.frame_by_frame = bar.frame_by_frame.isChecked()
        opts.loop = bar.loop.isChecked()
        opts.resolution = bar.resolution.currentData()
        opts.max_in_flight = bar.in_flight.value()

    def _record_toggled(self, checked: bool) -> None:
        if not checked:
            self._tasks.spawn(self.live.recorder.stop(), name="stop recording")
            return
        self.toolbar.record_action.setChecked(False)  # until the recording (or arming) is on
        # A file waits while the name is typed (a camera or stream cannot: it goes on live).
        hold = self._plays_a_file() and self.live.state is LiveState.PLAYING
        if hold:
            self.live.pause()
        # Qt's own dialog asks before replacing an existing file.
        path, _ = QFileDialog.getSaveFileName(
            self.window,
            "Record the annotated stream",
            self.record_default_path(),
            "Video (*.mp4 *.avi *.mov *.m4v)",
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if path:
            self.record_to(path)
        if hold and self.live.state is LiveState.PAUSED:
            self.live.start()  # resumes where it paused (recording from there when chosen)

    def _plays_a_file(self) -> bool:
        source = self.live.source
        return isinstance(source, str) and "://" not in source and Path(source).is_file()

    def record_default_path(self) -> str:
        """Where the Record dialog starts: the folder last recorded to, else the folder of the
        video playing, else the folder last opened from, else the home folder."""
        source = self.live.source
        video_dir = str(Path(source).parent) if isinstance(source, str) and "://" not in source else ""
        folder = self.record_dir or video_dir or self.opened_dir() or str(Path.home())
        return str(Path(folder) / time.strftime("live-%Y%m%d-%H%M%S.mp4"))

    def record_default_folder(self) -> str:
        """Where a wall tile's Record dialog starts: the folder last recorded to, else the
        folder last opened from, else the home folder."""
        return self.record_dir or self.opened_dir() or str(Path.home())

    def record_to(self, path: str) -> None:
        if Path(path).suffix.lower() not in VIDEO_SUFFIXES:
            path += ".mp4"
        self.record_dir = str(Path(path).parent)
        self.remember_record_dir(self.record_dir)  # at once: not only at a clean exit
        self.live.recorder.start(path)

    def _recording_changed(self, state: RecordingState) -> None:
        action = self.toolbar.record_action
        with signals_blocked(action):
            action.setChecked(state is not RecordingState.OFF)
        action.setText(
            {
                RecordingState.OFF: "● Record…",
                RecordingState.ARMED: "● Armed (press to cancel)",
                RecordingState.RECORDING: "● Stop recording",
            }[state]
        )
        if state is RecordingState.RECORDING:
            self.rec_mark.recording(self.live.recorder.since)
        elif state is RecordingState.ARMED:
            self.rec_mark.armed()
        else:
            self.rec_mark.stopped()
        self.toolbar.set_has_source(self.live.has_source)
