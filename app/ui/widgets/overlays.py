"""Marks drawn over other widgets without changing them: the REC mark with the elapsed time
on the video, a note in the middle of the picture (what it waits for), and the highlight
while files are dragged over the window."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QLabel, QWidget

REC_TICK_MS = 500


def format_elapsed(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class _Pinned(QLabel):
    """A label kept at a place of its parent as the parent resizes."""

    def __init__(self, parent: QWidget, place: Callable[[QWidget, QLabel], None]) -> None:
        super().__init__(parent)
        self._place = place
        parent.installEventFilter(self)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parent() and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self.reposition()
        return False

    def reposition(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.adjustSize()
            self._place(parent, self)
            self.raise_()


class RecordingMark(_Pinned):
    """ "● REC 00:12" at the top-left of the video while recording; "● REC armed" before."""

    def __init__(self, parent: QWidget, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent, lambda _p, label: label.move(10, 10))
        self._clock = clock
        self._since: float | None = None
        self.setStyleSheet(
            "QLabel { background: rgba(0, 0, 0, 170); color: #ff4040; font-weight: bold;"
            " border-radius: 4px; padding: 3px 8px; }"
        )
        self._timer = QTimer(self)
        self._timer.setInterval(REC_TICK_MS)
        self._timer.timeout.connect(self._tick)

    def armed(self) -> None:
        self._since = None
        self._timer.stop()
        self.setText("● REC armed: starts with the stream")
        self.reposition()
        self.show()

    def recording(self, since: float | None = None) -> None:
        self._since = self._clock() if since is None else since
        self._timer.start()
        self._tick()
        self.show()

    def stopped(self) -> None:
        self._since = None
        self._timer.stop()
        self.hide()

    def _tick(self) -> None:
        if self._since is not None:
            self.setText(f"● REC {format_elapsed(self._clock() - self._since)}")
            self.reposition()


class ViewNote(_Pinned):
    """A word in the middle of an empty picture: e.g. what the inputs opened wait for."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, _centre)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet(
            "QLabel { background: rgba(0, 0, 0, 150); color: #e6e6e6; border-radius: 6px;"
            " padding: 10px 16px; font-size: 12pt; }"
        )

    def show_text(self, text: str) -> None:
        self.setText(text)
        self.reposition()
        self.show()


def _centre(parent: QWidget, label: QLabel) -> None:
    width = min(label.sizeHint().width(), max(parent.width() - 40, 120))
    height = label.heightForWidth(width) if label.wordWrap() else label.sizeHint().height()
    label.setGeometry((parent.width() - width) // 2, (parent.height() - height) // 2, width, max(height, 1))


class DropHighlight(_Pinned):
    """A frame over the whole window while files are dragged over it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, lambda p, label: label.setGeometry(p.rect().adjusted(4, 4, -4, -4)))
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet(
            "QLabel { background: rgba(30, 120, 200, 60); border: 3px dashed #1e78c8; border-radius: 8px;"
            " color: white; font-size: 18pt; font-weight: bold; }"
        )
        self.setText("Drop to open")

    def set_text(self, text: str) -> None:
        self.setText(text)


def local_paths(event: QDragEnterEvent | QDropEvent) -> list[str]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()]
