"""PlotBase: what every QPainter-drawn plot of the viewer starts from: an expanding widget
with a minimum and a preferred size, painted over the palette's base colour."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget


class PlotBase(QWidget):
    def __init__(self, minimum: QSize, preferred: QSize, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._preferred = preferred
        self.setMinimumSize(minimum)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def sizeHint(self) -> QSize:
        return self._preferred

    def begin_paint(self) -> tuple[QPainter, QColor, QFontMetricsF]:
        """A painter on this widget (antialiased, the background filled), the text colour and
        the font's metrics. The caller ends the painter."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Base))
        return painter, palette.color(QPalette.ColorRole.Text), QFontMetricsF(self.font())
