"""One file or folder dropped on a widget (a dialog's field, a panel): accepted only when it is
exactly one local path, then emitted. An event filter, so the widget needs no drag handlers."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QWidget


def _one_path(event: QDragMoveEvent | QDropEvent) -> str | None:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return None
    paths = [url.toLocalFile() for url in mime.urls() if url.isLocalFile()]
    return paths[0] if len(paths) == 1 else None


class PathDrop(QObject):
    dropped = Signal(str)

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(event, QDragMoveEvent | QDropEvent):  # QDragEnterEvent is a QDragMoveEvent
            path = _one_path(event)
            if path is None:
                event.ignore()
                return True
            event.acceptProposedAction()
            if event.type() == QEvent.Type.Drop:
                self.dropped.emit(path)
            return True
        return False
