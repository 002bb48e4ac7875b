"""Graphics items for one detection: its box outline, its zoom-independent label, and its mask fill
and keypoints when the model gives them (app/ui/view/overlay_items.py). They draw the detection's
shape of the draw list (app/drawing) through the one QPainter backend (painter.py)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QTransform
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QStyleOptionGraphicsItem, QWidget

from app.drawing.draw_list import DetectionShape, Polyline, Size, Text, detection_shape
from app.drawing.style import AnnotationStyle
from app.inference.result import Detection
from app.ui.view.overlay_items import KeypointsItem, MaskItem
from app.ui.view.painter import DevicePainter, device_box, qcolor, text_layout, text_origin

BOX_PEN_WIDTH = AnnotationStyle().box_width  # screen pixels, whatever the zoom (cosmetic pen)


class LabelItem(QGraphicsItem):
    """The "label score" tag, drawn in screen pixels (ignores the view's zoom).

    Its origin is the box's top-left corner; it sits just above the box, or just inside it when
    the picture has no room above at the current zoom, and stays within the picture's width.
    """

    def __init__(self, text: Text, picture: Size | None, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._text = text
        self._picture = picture
        self._layout = text_layout(text)
        self._scale = 1.0
        self._bounds_rect: QRectF | None = None  # as for the box: kept until the zoom changes
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)

    def text(self) -> str:
        return self._text.lines[0]

    def set_view_scale(self, scale: float) -> None:
        """The view's zoom: where the picture's edges are, in this item's screen pixels."""
        if scale > 0 and scale != self._scale:
            self.prepareGeometryChange()
            self._scale = scale
            self._bounds_rect = None

    def _to_device(self, anchor: QPointF) -> QTransform:
        """Image pixels -> device pixels, from where the anchor (the box's corner) lands."""
        x, y = self._text.anchor
        s = self._scale
        return QTransform(s, 0, 0, s, anchor.x() - x * s, anchor.y() - y * s)

    def _bounds(self, to_device: QTransform) -> QRect | None:
        if self._picture is None:
            return None
        w, h = self._picture
        return device_box(to_device, (0.0, 0.0, float(w), float(h)))

    def boundingRect(self) -> QRectF:
        if self._bounds_rect is None:
            bounds = self._bounds(self._to_device(QPointF(0, 0)))
            origin = text_origin(self._text, self._layout, QPointF(0, 0), bounds, 1.0)
            # One pixel more each side: the anchor is rounded to a whole device pixel when painted.
            self._bounds_rect = QRectF(
                origin.x() - 1, origin.y() - 1, self._layout.width + 2, self._layout.height + 2
            )
        return self._bounds_rect

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        anchor = painter.worldTransform().map(QPointF(0, 0))
        bounds = self._bounds(self._to_device(anchor))
        with DevicePainter(painter, painter.worldTransform()) as device:
            device.text(self._text, anchor, bounds, self._layout)


class DetectionItem(QGraphicsRectItem):
    """A detection box in scene (= image pixel) coordinates, with its label as a child (and
    its mask behind the box, its keypoints over it). Its pen (colour, width, dashes) is the
    outline drawn: the detections list and the compare view change it."""

    def __init__(
        self,
        detection: Detection,
        style: AnnotationStyle | None = None,
        color: QColor | None = None,
        picture: Size | None = None,
    ) -> None:
        x1, y1, x2, y2 = (float(v) for v in detection.box)
        super().__init__(QRectF(x1, y1, x2 - x1, y2 - y1))
        style = style or AnnotationStyle()
        rgb = None if color is None else (color.red(), color.green(), color.blue())
        self.shape_: DetectionShape = detection_shape(detection, style, rgb)  # default: the class's colour
        self.detection = detection
        self._scale = 1.0
        # boundingRect() is asked several times per paint: kept, renewed when the zoom changes.
        self._bounds_rect = self._outline_bounds()
        pen = QPen(qcolor(self.shape_.outline.color), self.shape_.outline.width)
        pen.setCosmetic(True)  # constant on-screen width at any zoom
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        self.setPen(pen)
        self.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        self.label_item = LabelItem(self.shape_.tag, picture, self)
        self.label_item.setPos(x1, y1)
        self.setToolTip(f"{detection.label} (class {detection.class_id})  score {detection.score:.3f}")
        self.mask_item: MaskItem | None = None
        self.keypoints_item: KeypointsItem | None = None
        if self.shape_.fill is not None:
            self.mask_item = MaskItem(self.shape_.fill, self)
            self.mask_item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemStacksBehindParent, True)
            self.mask_item.setOpacity(self.shape_.fill.opacity)
        if detection.keypoints:
            self.keypoints_item = KeypointsItem(self.shape_, style.keypoint_names, self)

    def set_view_scale(self, scale: float) -> None:
        """The view's zoom, for the parts drawn in screen pixels."""
        if scale > 0 and scale != self._scale:
            self.prepareGeometryChange()
            self._scale = scale
            self._bounds_rect = self._outline_bounds()
        self.label_item.set_view_scale(scale)
        if self.keypoints_item is not None:
            self.keypoints_item.set_view_scale(scale)

    def _outline_bounds(self) -> QRectF:
        # The outline lies inside the box; one device pixel more for its rounding to whole pixels.
        margin = 1.0 / self._scale
        return self.rect().adjusted(-margin, -margin, margin, margin)

    def boundingRect(self) -> QRectF:
        return self._bounds_rect

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        rect = device_box(painter.worldTransform(), self.shape_.outline.box)
        pen = self.pen()
        with DevicePainter(painter, painter.worldTransform()) as device:
            rotated = self.shape_.rotated
            if rotated is not None:  # an oriented box: its own outline, in the pen's colour
                color = pen.color()
                device.polyline(
                    Polyline(rotated.points, (color.red(), color.green(), color.blue()), pen.widthF())
                )
            else:
                device.outline(rect, pen.color(), pen.widthF(), pen.style() != Qt.PenStyle.SolidLine)
