"""ThumbnailStrip: a horizontal row of small thumbnails with an ok/failed marker."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QListView, QListWidget, QListWidgetItem, QWidget

from app.pipeline.thumbnails import THUMB_SIZE, make_thumbnail
from app.ui.qimage import rgb_to_qimage

KeyRole = Qt.ItemDataRole.UserRole + 1
StatusRole = Qt.ItemDataRole.UserRole + 2  # True ok, False failed, None pending
FAILED_COLOR = QColor(220, 40, 40)
PENDING_COLOR = QColor(150, 150, 150)


class ThumbnailStrip(QListWidget):
    """`add_item(key, image, status_ok)`, `set_status(key, ok)`; emits `selected(key)`."""

    selected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setFlow(QListView.Flow.LeftToRight)
        self.setWrapping(False)
        self.setMovement(QListView.Movement.Static)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setIconSize(QSize(THUMB_SIZE, THUMB_SIZE))
        self.setUniformItemSizes(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFixedHeight(THUMB_SIZE + 2 * self.fontMetrics().height() + 16)
        self._items: dict[str, QListWidgetItem] = {}
        self._thumbs: dict[str, QPixmap] = {}
        self.currentItemChanged.connect(self._on_current_changed)

    def add_item(self, key: str, image_rgb: np.ndarray, status_ok: bool | None = None) -> None:
        """Add (or replace the picture of) the thumbnail for `key`."""
        self._thumbs[key] = QPixmap.fromImage(rgb_to_qimage(make_thumbnail(image_rgb)))
        item = self._items.get(key)
        if item is None:
            item = QListWidgetItem(key.rsplit("/", 1)[-1])
            item.setData(KeyRole, key)
            item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter)
            self.addItem(item)
            self._items[key] = item
        self._apply(key, status_ok)

    def set_status(self, key: str, ok: bool | None) -> None:
        if key in self._items:
            self._apply(key, ok)

    def status(self, key: str) -> bool | None:
        value = self._items[key].data(StatusRole)
        return None if value is None else bool(value)

    def keys(self) -> list[str]:
        return list(self._items)

    def item_for(self, key: str) -> QListWidgetItem | None:
        return self._items.get(key)

    def clear(self) -> None:
        super().clear()
        self._items.clear()
        self._thumbs.clear()

    def _apply(self, key: str, ok: bool | None) -> None:
        item = self._items[key]
        item.setData(StatusRole, ok)
        item.setIcon(QIcon(self._framed(self._thumbs[key], ok)))
        state = {True: "ok", False: "failed", None: "pending"}[ok]
        item.setToolTip(f"{key}\n{state}")

    @staticmethod
    def _framed(thumb: QPixmap, ok: bool | None) -> QPixmap:
        """The thumbnail centred on a square canvas; a red frame + corner dot when failed."""
        canvas = QPixmap(THUMB_SIZE, THUMB_SIZE)
        canvas.fill(Qt.GlobalColor.transparent)
        painter = QPainter(canvas)
        x = (THUMB_SIZE - thumb.width()) // 2
        y = (THUMB_SIZE - thumb.height()) // 2
        painter.drawPixmap(x, y, thumb)
        if ok is False:
            painter.setPen(QPen(FAILED_COLOR, 4))
            painter.drawRect(x + 2, y + 2, thumb.width() - 4, thumb.height() - 4)
        if ok is not True:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(FAILED_COLOR if ok is False else PENDING_COLOR)
            painter.drawEllipse(THUMB_SIZE - 16, 4, 12, 12)
        painter.end()
        return canvas

    def _on_current_changed(self, current: QListWidgetItem | None, _previous: object) -> None:
        if current is not None:
            self.selected.emit(str(current.data(KeyRole)))
