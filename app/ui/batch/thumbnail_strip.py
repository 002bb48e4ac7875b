"""ThumbnailStrip: a horizontal row of small thumbnails, each marked: failed (red frame and
dot), pending (grey dot), and how many things it shows (a count badge: detections, or a semantic
model's classes present; a hollow "0" for an image without any), its tooltip saying what
("2 detections", "person 58 %"). Items can be hidden (the batch's search and filters)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QListView, QListWidget, QListWidgetItem, QWidget
from superqt.utils import signals_blocked

from app.pipeline.thumbnails import THUMB_SIZE, make_thumbnail
from app.ui.base.qimage import rgb_to_qimage

KeyRole = Qt.ItemDataRole.UserRole + 1
StatusRole = Qt.ItemDataRole.UserRole + 2  # True ok, False failed, None pending
CountRole = Qt.ItemDataRole.UserRole + 3  # detections shown for it (None: not known)
SummaryRole = Qt.ItemDataRole.UserRole + 4  # what it shows, in words ("person 58 %")
FAILED_COLOR = QColor(220, 40, 40)
PENDING_COLOR = QColor(150, 150, 150)
BADGE_COLOR = QColor(20, 110, 60)
EMPTY_COLOR = QColor(120, 120, 120)
ICON_SIZE = 72  # on screen; the pictures are made at THUMB_SIZE and scaled (crisp on high-DPI)


class ThumbnailStrip(QListWidget):
    """`add_item(key, image, status_ok)`, `set_status(key, ok)`, `set_count(key, n)`; emits
    `selected(key)`. `namer(key)` gives an item's text (default: the file name)."""

    selected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setFlow(QListView.Flow.LeftToRight)
        self.setWrapping(False)
        self.setMovement(QListView.Movement.Static)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setIconSize(QSize(ICON_SIZE, ICON_SIZE))
        self.setTextElideMode(Qt.TextElideMode.ElideLeft)  # the file name stays readable
        line = self.fontMetrics().height()
        self.setGridSize(QSize(ICON_SIZE + 56, ICON_SIZE + line + 10))
        self.setUniformItemSizes(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scrollbar = self.horizontalScrollBar().sizeHint().height()
        self.setFixedHeight(self.gridSize().height() + scrollbar + 2 * self.frameWidth() + 4)
        self.namer: Callable[[str], str] = lambda key: Path(key).name
        self._items: dict[str, QListWidgetItem] = {}
        self._thumbs: dict[str, QPixmap] = {}
        self.currentItemChanged.connect(self._on_current_changed)

    def add_item(self, key: str, image_rgb: np.ndarray, status_ok: bool | None = None) -> None:
        """Add (or replace the picture of) the thumbnail for `key`."""
        self._thumbs[key] = QPixmap.fromImage(rgb_to_qimage(make_thumbnail(image_rgb)))
        item = self._items.get(key)
        if item is None:
            item = QListWidgetItem(self.namer(key))
            item.setData(KeyRole, key)
            item.setTextAlignment(Qt.AlignmentFlag.AlignHCenter)
            self.addItem(item)
            self._items[key] = item
        self._apply(key, status_ok, item.data(CountRole))

    def set_status(self, key: str, ok: bool | None) -> None:
        item = self._items.get(key)
        if item is not None:
            self._apply(key, ok, item.data(CountRole))

    def set_count(self, key: str, count: int | None, summary: str | None = None) -> None:
        """How many things the image shows (its badge; None: no badge) and what, in words (its
        tooltip; default: "n detection(s)")."""
        item = self._items.get(key)
        if item is not None and (item.data(CountRole), item.data(SummaryRole)) != (count, summary):
            item.setData(SummaryRole, summary)
            self._apply(key, self.status(key), count)

    def status(self, key: str) -> bool | None:
        value = self._items[key].data(StatusRole)
        return None if value is None else bool(value)

    def detection_count(self, key: str) -> int | None:
        value = self._items[key].data(CountRole)
        return None if value is None else int(value)

    def keys(self) -> list[str]:
        return list(self._items)

    def visible_keys(self) -> list[str]:
        """The keys not hidden by a filter, in strip order."""
        return [str(self.item(row).data(KeyRole)) for row in range(self.count()) if not self.isRowHidden(row)]

    def set_hidden(self, key: str, hidden: bool) -> None:
        item = self._items.get(key)
        if item is not None and item.isHidden() != hidden:
            item.setHidden(hidden)

    def reorder(self, keys: list[str]) -> None:
        """Put the thumbnails in the order of `keys` (those not named follow, as they were);
        the current one stays current, without a `selected` signal (nothing else changed)."""
        rank = {key: i for i, key in enumerate(keys)}
        current = self.currentItem()
        with signals_blocked(self):
            items = [self.takeItem(0) for _ in range(self.count())]
            items.sort(key=lambda item: rank.get(str(item.data(KeyRole)), len(rank)))
            for item in items:
                self.addItem(item)
            if current is not None:
                self.setCurrentItem(current)

    def item_for(self, key: str) -> QListWidgetItem | None:
        return self._items.get(key)

    def clear(self) -> None:
        super().clear()
        self._items.clear()
        self._thumbs.clear()

    def _apply(self, key: str, ok: bool | None, count: int | None) -> None:
        item = self._items[key]
        item.setData(StatusRole, ok)
        item.setData(CountRole, count)
        item.setIcon(QIcon(self._framed(self._thumbs[key], ok, count)))
        if ok is None:
            state = "waiting for the result"
        elif ok is False:
            state = "failed"
        else:
            summary = item.data(SummaryRole)
            state = summary or ("no detections" if count == 0 else f"{count} detection(s)")
        item.setToolTip(f"{self.namer(key)}\n{state}")

    @staticmethod
    def _framed(thumb: QPixmap, ok: bool | None, count: int | None) -> QPixmap:
        """The thumbnail centred on a square canvas, with its marks."""
        canvas = QPixmap(THUMB_SIZE, THUMB_SIZE)
        canvas.fill(Qt.GlobalColor.transparent)
        painter = QPainter(canvas)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        x = (THUMB_SIZE - thumb.width()) // 2
        y = (THUMB_SIZE - thumb.height()) // 2
        painter.drawPixmap(x, y, thumb)
        if ok is False:
            painter.setPen(QPen(FAILED_COLOR, 4))
            painter.drawRect(x + 2, y + 2, thumb.width() - 4, thumb.height() - 4)
        if ok is not True:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(FAILED_COLOR if ok is False else PENDING_COLOR)
            painter.drawEllipse(THUMB_SIZE - 18, 4, 14, 14)
        elif count is not None:
            _badge(painter, count)
        painter.end()
        return canvas

    def _on_current_changed(self, current: QListWidgetItem | None, _previous: object) -> None:
        if current is not None:
            self.selected.emit(str(current.data(KeyRole)))


def _badge(painter: QPainter, count: int) -> None:
    """Top-right: the detection count on a green badge, or a hollow grey "0"."""
    font = QFont()
    font.setPixelSize(13)
    font.setBold(True)
    painter.setFont(font)
    text = str(count) if count < 100 else "99+"
    width = max(20.0, painter.fontMetrics().horizontalAdvance(text) + 10.0)
    rect = QRectF(THUMB_SIZE - width - 3, 3, width, 18)
    if count == 0:
        painter.setPen(QPen(EMPTY_COLOR, 2))
        painter.setBrush(QColor(255, 255, 255, 200))
        painter.drawRoundedRect(rect, 9, 9)
        painter.setPen(EMPTY_COLOR)
    else:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(BADGE_COLOR)
        painter.drawRoundedRect(rect, 9, 9)
        painter.setPen(QColor(255, 255, 255))
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
