"""StackedBar: one horizontal bar cut into coloured parts in proportion to their values."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget


class StackedBar(QWidget):
    """`set_parts([(value, colour), ...])`; an empty or all-zero list leaves the bar blank."""

    def __init__(self, height: int = 18, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.parts: list[tuple[float, QColor]] = []
        self._height = height
        self.setMinimumHeight(height)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(240, self._height + 2)

    def set_parts(self, parts: list[tuple[float, QColor]]) -> None:
        self.parts = [(max(0.0, value), colour) for value, colour in parts]
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), self.palette().color(QPalette.ColorRole.Base))
        total = sum(value for value, _ in self.parts)
        if total > 0:
            x = 0.0
            for value, colour in self.parts:
                w = self.width() * value / total
                painter.fillRect(QRectF(x, 0, w, self.height()), colour)
                x += w
        painter.end()
