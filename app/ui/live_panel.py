"""The live preview's controls: a toolbar and a Live menu (plus File > Open camera/video/stream),
wired to a LiveController."""

from __future__ import annotations

import time
from concurrent.futures import Executor

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

from app.pipeline.live import LiveState
from app.ui.camera_picker import CameraPicker, ask_stream_url, ask_video_file
from app.ui.live_controller import LiveController
from app.ui.tasks import TaskSet

RESOLUTIONS: tuple[tuple[str, tuple[int, int] | None], ...] = (
    ("Camera default", None),
    ("640x480", (640, 480)),
    ("1280x720", (1280, 720)),
    ("1920x1080", (1920, 1080)),
)
MAX_IN_FLIGHT = 32
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
        self.pause_action = QAction("❚❚ Pause", self)
        self.stop_action = QAction("■ Stop", self)
        self.record_action = QAction("● Record…", self)
        self.record_action.setCheckable(True)
        self.record_action.setToolTip("Record the annotated stream (video) and its detections (JSON Lines)")
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
        self.loop.setToolTip("Video files: start again at the end. Applies at the next Start.")
        self.resolution = QComboBox()
        for text, size in RESOLUTIONS:
            self.resolution.addItem(text, size)
        self.resolution.setToolTip("Cameras: the capture resolution to ask for. Applies at the next Start.")
        self.state_label = QLabel(STATE_TEXT[LiveState.IDLE])
        self.state_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for action in (self.open_action, self.start_action, self.pause_action, self.stop_action):
            self.addAction(action)
        self.addSeparator()
        self.addWidget(QLabel(" In flight "))
        self.addWidget(self.in_flight)
        self.addWidget(self.frame_by_frame)
        self.addWidget(self.loop)
        self.addWidget(self.resolution)
        self.addAction(self.record_action)
        self.addSeparator()
        self.addWidget(self.state_label)
        self.set_state(LiveState.IDLE, "")

    def set_state(self, value: str, detail: str) -> None:
        state = LiveState(value)
        title = STATE_TEXT[state]
        self.state_label.setText(f" {title}: {detail}" if detail else f" {title}")
        self.state_label.setToolTip(detail)
        self.start_action.setEnabled(state not in (LiveState.PLAYING, LiveState.WAITING))
        self.pause_action.setEnabled(state is LiveState.PLAYING)
        self.stop_action.setEnabled(
            state in (LiveState.PLAYING, LiveState.PAUSED, LiveState.WAITING, LiveState.ENDED)
        )


class LiveUi:
    """Builds the toolbar and menus on `window` and connects them to `live`."""

    def __init__(
        self,
        window: QMainWindow,
        file_menu: QMenu,
        live: LiveController,
        executor: Executor,
        tasks: TaskSet,
    ) -> None:
        self.window, self.live = window, live
        self._executor, self._tasks = executor, tasks
        self.toolbar = bar = LiveToolbar(window)
        window.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.open_camera_action = QAction("Open &camera…", window)
        self.open_camera_action.setShortcut(QKeySequence("Ctrl+K"))
        self.open_video_action = QAction("Open &video…", window)
        self.open_stream_action = QAction("Open stream &URL…", window)
        self._insert_into_file_menu(file_menu)
        menu = window.menuBar().addMenu("&Live")
        for action in (self.open_camera_action, self.open_video_action, self.open_stream_action):
            menu.addAction(action)
        menu.addSeparator()
        for action in (bar.start_action, bar.pause_action, bar.stop_action):
            menu.addAction(action)
        menu.addSeparator()
        menu.addAction(bar.record_action)
        self.picker: CameraPicker | None = None

        bar.open_action.triggered.connect(self.open_camera)
        self.open_camera_action.triggered.connect(self.open_camera)
        self.open_video_action.triggered.connect(self.open_video)
        self.open_stream_action.triggered.connect(self.open_stream)
        bar.start_action.triggered.connect(self._start)
        bar.pause_action.triggered.connect(live.pause)
        bar.stop_action.triggered.connect(live.stop)
        bar.record_action.triggered.connect(self._record_toggled)
        bar.in_flight.valueChanged.connect(live.set_max_in_flight)
        bar.frame_by_frame.toggled.connect(self._options_changed)
        bar.loop.toggled.connect(self._options_changed)
        bar.resolution.currentIndexChanged.connect(self._options_changed)
        live.state_changed.connect(bar.set_state)
        live.recording_changed.connect(self._recording_changed)

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
        picker.source_chosen.connect(self._open_source)
        picker.finished.connect(self._picker_closed)
        picker.open()  # window-modal, without a nested event loop

    def _picker_closed(self, _result: int) -> None:
        if self.picker is not None:
            self.picker.deleteLater()
            self.picker = None

    def open_video(self) -> None:
        path = ask_video_file(self.window)
        if path:
            self._open_source(path)

    def open_stream(self) -> None:
        url = ask_stream_url(self.window)
        if url:
            self._open_source(url)

    def _open_source(self, source: object) -> None:
        self._options_changed()
        if isinstance(source, int):
            self.live.open(source)
        else:
            self.live.open_text(str(source))

    # -- controls ------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._options_changed()
        if self.live.source is None:
            self.open_camera()
        else:
            self.live.start()

    def _options_changed(self, *_args: object) -> None:
        bar, opts = self.toolbar, self.live.options
        opts.frame_by_frame = bar.frame_by_frame.isChecked()
        opts.loop = bar.loop.isChecked()
        opts.resolution = bar.resolution.currentData()
        opts.max_in_flight = bar.in_flight.value()

    def _record_toggled(self, checked: bool) -> None:
        if not checked:
            self._tasks.spawn(self.live.stop_recording(), name="stop recording")
            return
        default = time.strftime("live-%Y%m%d-%H%M%S.mp4")
        path, _ = QFileDialog.getSaveFileName(
            self.window,
            "Record the annotated stream",
            default,
            "Video (*.mp4 *.avi *.mov *.m4v)",
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if not path:
            self.toolbar.record_action.setChecked(False)
            return
        self.live.start_recording(path)

    def _recording_changed(self, on: bool) -> None:
        action = self.toolbar.record_action
        action.blockSignals(True)
        action.setChecked(on)
        action.blockSignals(False)
        action.setText("● Stop recording" if on else "● Record…")
