"""CameraPicker: the cameras that open (found on the executor), a video file, or a stream URL."""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.sources.cameras import CameraInfo, list_cameras
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import secondary_window

VIDEO_FILTER = "Videos (*.mp4 *.avi *.mkv *.mov *.m4v *.webm *.mpg *.mpeg *.wmv);;All files (*)"


def ask_video_file(parent: QWidget, folder: str = "") -> str | None:
    path, _ = QFileDialog.getOpenFileName(
        parent, "Open a video", folder, VIDEO_FILTER, options=QFileDialog.Option.DontUseNativeDialog
    )
    return path or None


def ask_stream_url(parent: QWidget) -> str | None:
    text, ok = QInputDialog.getText(
        parent, "Open a stream", "Stream URL (rtsp://, rtmp://, http(s)://, udp://, srt://):"
    )
    return text.strip() if ok and text.strip() else None


class CameraPicker(QDialog):
    """Emits `source_chosen(source)`: a camera index (int), a video path or a URL (str).

    Probing cameras opens each device briefly (up to seconds on some drivers), so
    list_cameras() runs on the executor; the list fills in when it returns.
    """

    source_chosen = Signal(object)

    def __init__(self, executor: Executor, tasks: TaskSet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open a camera")
        self.setMinimumWidth(420)
        self.status = QLabel("Looking for cameras…")
        self.cameras = QListWidget()
        self.video_button = QPushButton("Video file…")
        self.url_button = QPushButton("Stream URL…")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.addButton(self.video_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.addButton(self.url_button, QDialogButtonBox.ButtonRole.ActionRole)
        self._open_button = self.buttons.button(QDialogButtonBox.StandardButton.Open)
        self._open_button.setEnabled(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.cameras, 1)
        layout.addWidget(self.buttons)
        self.buttons.accepted.connect(self._choose_camera)
        self.buttons.rejected.connect(self.reject)
        self.cameras.itemDoubleClicked.connect(lambda _item: self._choose_camera())
        self.cameras.currentItemChanged.connect(
            lambda item, _prev: self._open_button.setEnabled(item is not None)
        )
        self.video_button.clicked.connect(self._choose_video)
        self.url_button.clicked.connect(self._choose_url)
        secondary_window(self)
        self._task = tasks.spawn(self._find(executor), name="list cameras")
        self.finished.connect(lambda _r: self._task.cancel())

    async def _find(self, executor: Executor) -> None:
        found = await asyncio.get_running_loop().run_in_executor(executor, list_cameras)
        self.set_cameras(found)

    def set_cameras(self, cameras: list[CameraInfo]) -> None:
        self.cameras.clear()
        for cam in cameras:
            item = QListWidgetItem(f"{cam.index}: {cam.name} ({cam.width}x{cam.height})")
            item.setData(Qt.ItemDataRole.UserRole, cam.index)
            self.cameras.addItem(item)
        if cameras:
            self.status.setText(f"{len(cameras)} camera(s) found:")
            self.cameras.setCurrentRow(0)
        else:
            self.status.setText("No camera found. Open a video file or a stream URL instead.")

    def _choose_camera(self) -> None:
        item = self.cameras.currentItem()
        if item is None:
            return
        self.source_chosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))
        self.accept()

    def _choose_video(self) -> None:
        path = ask_video_file(self)
        if path:
            self.source_chosen.emit(path)
            self.accept()

    def _choose_url(self) -> None:
        url = ask_stream_url(self)
        if url:
            self.source_chosen.emit(url)
            self.accept()
