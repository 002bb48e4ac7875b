"""Graphics items for what a model gives beyond boxes: mask fills and keypoints with their
skeleton. Scene coordinates are image pixels; each item paints its part of the draw list
(app/drawing) through the one QPainter backend (painter.py)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSceneHoverEvent, QStyleOptionGraphicsItem, QWidget

from app.drawing.draw_list import DetectionShape, Fill
from app.ui.view.painter import DevicePainter, mask_image, qcolor


class ZoomFollowingItem(QGraphicsItem):
    """An item drawn in device pixels (constant size on screen): its extent in scene units
    depends on the zoom, which the view pushes with `set_view_scale`."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._scale = 1.0

    def set_view_scale(self, scale: float) -> None:
        if scale > 0 and scale != self._scale:
            self.prepareGeometryChange()
            self._scale = scale


class MaskItem(QGraphicsItem):
    """A mask as a solid fill in one colour; translucency comes from the item's opacity (the
    view sets it to the style's mask opacity)."""

    def __init__(self, fill: Fill, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.fill = fill
        self.mask = fill.mask
        self.color = qcolor(fill.color)
        # Why keep `_bytes`: QImage does not copy the buffer it is given.
        self._image, self._bytes = mask_image(fill.mask, fill.color)
        self.setPos(fill.mask.left, fill.mask.top)

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, self._bytes.shape[1], self._bytes.shape[0])

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        if self._bytes.size:
            # Image pixels -> device: undo the item's own position, then the painter's transform.
            to_device = QTransform.fromTranslate(-self.mask.left, -self.mask.top) * painter.worldTransform()
            with DevicePainter(painter, to_device) as device:
                device.fill(self.fill, 1.0, self._image)  # the item's opacity is the mask opacity


class KeypointsItem(ZoomFollowingItem):
    """Keypoints as dots of constant screen size, joined by the skeleton's lines; points
    scoring below the style's visible score (and lines touching them) are not drawn. When the
    style draws edges only (a face mesh's contours), the dots appear only while the mouse is
    over the item and the tooltip names the nearest point."""

    def __init__(
        self, shape: DetectionShape, names: tuple[str, ...] = (), parent: QGraphicsItem | None = None
    ) -> None:
        super().__init__(parent)
        self.shape_ = shape
        keypoints = shape.detection.keypoints or ()
        self.points = [QPointF(x, y) for x, y, _ in keypoints]
        self.lines = list(shape.edges)
        self.color = qcolor(shape.outline.color)
        segments = shape.skeleton.segments if shape.skeleton is not None else ()
        drawn = [QPointF(x, y) for segment in segments for x, y in segment]
        point_dots = shape.dots or shape.hover_dots
        if point_dots is not None:
            drawn += [QPointF(x, y) for x, y in point_dots.points]
        self._visible = list(shape.visible)
        xs, ys = [p.x() for p in drawn], [p.y() for p in drawn]
        self._extent = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)) if drawn else QRectF()
        self._margin = max(
            (point_dots.radius + point_dots.outline_width) if point_dots is not None else 0.0,
            shape.skeleton.width if shape.skeleton is not None else 0.0,
        )
        self._tips = [
            f"{names[i] if i < len(names) else f'keypoint {i}'}: ({x:.0f}, {y:.0f}) {s:.2f}"
            for i, (x, y, s) in enumerate(keypoints)
        ]
        self._hovered = False
        # Edges only: the points show under the mouse, and the tooltip follows the nearest one.
        on_hover = shape.hover_dots is not None
        self.setAcceptHoverEvents(on_hover)
        self.setToolTip("" if on_hover else "\n".join(self._tips))

    def hoverEnterEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self._hovered = True
        self.update()

    def hoverMoveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.setToolTip(self.nearest_tip(event.pos()))

    def hoverLeaveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self._hovered = False
        self.update()

    def nearest_tip(self, pos: QPointF) -> str:
        """The tooltip line of the visible point nearest to `pos` (scene pixels)."""
        shown = [i for i, v in enumerate(self._visible) if v]
        if not shown:
            return ""
        best = min(
            shown, key=lambda i: (self.points[i].x() - pos.x()) ** 2 + (self.points[i].y() - pos.y()) ** 2
        )
        return self._tips[best]

    def visible_points(self) -> list[QPointF]:
        """The keypoints scoring at least the visible score (drawn as dots unless edges only)."""
        return [p for p, v in zip(self.points, self._visible, strict=True) if v]

    def boundingRect(self) -> QRectF:
        if self._extent.isNull() and not any(self._visible):
            return QRectF()
        margin = (self._margin + 1) / self._scale
        return self._extent.adjusted(-margin, -margin, margin, margin)

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        with DevicePainter(painter, painter.worldTransform()) as device:
            if self.shape_.skeleton is not None:
                device.lines(self.shape_.skeleton)
            dots = self.shape_.dots or (self.shape_.hover_dots if self._hovered else None)
            if dots is not None:
                device.dots(dots)
