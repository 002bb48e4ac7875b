"""A classifier's top-k drawn on the image, in its top-left corner, at constant screen size."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFontMetricsF, QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.inference.result import ClassScore
from app.ui.view.detection_items import LABEL_PADDING, label_font


class ClassesItem(QGraphicsItem):
    """A classifier's top-k as a small table in the image's top-left corner (screen pixels)."""

    def __init__(self, classes: Sequence[ClassScore], parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.lines = [f"{c.label}  {c.score:.2f}" for c in classes]
        self._font = label_font()
        metrics = QFontMetricsF(self._font)
        self._line_height = metrics.height()
        self._ascent = metrics.ascent()
        width = max((metrics.horizontalAdvance(t) for t in self.lines), default=0.0)
        self._rect = QRectF(
            0, 0, width + 2 * LABEL_PADDING, self._line_height * len(self.lines) + 2 * LABEL_PADDING
        )
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        background = QColor(0, 0, 0, 170)
        painter.fillRect(self._rect, background)
        painter.setFont(self._font)
        painter.setPen(QColor(255, 255, 255))
        for i, text in enumerate(self.lines):
            top = LABEL_PADDING + i * self._line_height
            painter.drawText(QPointF(LABEL_PADDING, top + self._ascent), text)
