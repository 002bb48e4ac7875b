"""A classifier's top-k drawn on the image, in its top-left corner, at constant screen size."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.drawing.draw_list import Text
from app.ui.view.painter import DevicePainter, text_layout


class ClassesItem(QGraphicsItem):
    """A classifier's top-k as a small table in the image's top-left corner (screen pixels): the
    draw list's top-k text, painted by the one backend."""

    def __init__(self, text: Text, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.text = text
        self.lines = list(text.lines)
        self._layout = text_layout(text)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)

    def boundingRect(self) -> QRectF:
        # One pixel more each side: the corner is rounded to a whole device pixel when painted.
        return QRectF(-1, -1, self._layout.width + 2, self._layout.height + 2)

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        anchor = painter.worldTransform().map(QPointF(0, 0))
        with DevicePainter(painter, painter.worldTransform()) as device:
            device.text(self.text, anchor, None, self._layout)
