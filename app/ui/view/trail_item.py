"""Short trails of tracked objects over the image: each track's recent box centres joined by a
line in the track's colour, with its id at the head (the draw list's trail shapes, painted by the
one backend). Scene coordinates are image pixels."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.drawing.draw_list import TrailShape, TrailSource, trail_shape
from app.drawing.style import AnnotationStyle
from app.ui.view.overlay_items import ZoomFollowingItem
from app.ui.view.painter import DevicePainter

TEXT_ROOM = 60.0  # screen pixels beside the head for the "#id" text


class TrailsItem(ZoomFollowingItem):
    """The trails of the tracks still followed; `set_tracks()` replaces them."""

    def __init__(self, style: AnnotationStyle | None = None, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.style = style or AnnotationStyle()
        self.shapes: list[TrailShape] = []
        self.trails: list[tuple[int, list[QPointF]]] = []
        self._bounds = QRectF()
        self.setZValue(3)  # over boxes and masks

    def set_tracks(self, tracks: Sequence[TrailSource]) -> None:
        self.prepareGeometryChange()
        self.shapes = [s for s in (trail_shape(t, self.style) for t in tracks) if s is not None]
        self.trails = [
            (s.track_id, [QPointF(x, y) for x, y in (s.line.points if s.line else s.head.points)])
            for s in self.shapes
        ]
        points = [p for _, trail in self.trails for p in trail]
        if points:
            xs, ys = [p.x() for p in points], [p.y() for p in points]
            self._bounds = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        else:
            self._bounds = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:
        if not self.trails:
            return QRectF()
        # The pen, the head dot and the id text are drawn in screen pixels.
        margin = TEXT_ROOM / self._scale
        return self._bounds.adjusted(-margin, -margin, margin, margin)

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        with DevicePainter(painter, painter.worldTransform()) as device:
            for shape in self.shapes:
                for primitive in shape.primitives():
                    device.primitive(primitive, None)
