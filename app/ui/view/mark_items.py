"""The graphics item of a mark (app/drawing/marks.py): a labelled object drawn dashed beside the
model's boxes, or a false positive's mark over its box, with its tag under the box. Painted by
the one QPainter backend, in screen pixels whatever the zoom, like the detections."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.drawing.draw_list import Size
from app.drawing.marks import MarkShape
from app.ui.view.detection_items import LabelItem
from app.ui.view.overlay_items import ZoomFollowingItem
from app.ui.view.painter import DevicePainter


class MarkItem(ZoomFollowingItem):
    """A mark's outline in scene (= image pixel) coordinates, its tag as a child."""

    def __init__(self, shape: MarkShape, picture: Size | None, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.shape_ = shape
        x1, y1, x2, y2 = shape.outline.box
        self._rect = QRectF(x1, y1, x2 - x1, y2 - y1)
        self.label_item = LabelItem(shape.tag, picture, self)
        self.label_item.setPos(*shape.tag.anchor)
        self.setToolTip(f"{shape.tag.lines[0]}  [{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]")

    def text(self) -> str:
        return self.label_item.text()

    def set_view_scale(self, scale: float) -> None:
        super().set_view_scale(scale)
        self.label_item.set_view_scale(scale)

    def boundingRect(self) -> QRectF:
        # The outline lies inside the box; one device pixel more for its rounding to whole pixels.
        margin = 1.0 / self._scale
        return self._rect.adjusted(-margin, -margin, margin, margin)

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        with DevicePainter(painter, painter.worldTransform()) as device:
            device.box(self.shape_.outline)
