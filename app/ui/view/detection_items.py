"""Graphics items for one detection: a cosmetic-pen box, a zoom-independent label, and its
mask fill and keypoints when the model gives them (app/ui/view/overlay_items.py)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QStyleOptionGraphicsItem, QWidget

from app.inference.result import Detection
from app.ui.base.colors import class_color, detection_label, text_color_on
from app.ui.view.overlay_items import KeypointsItem, MaskItem, OverlayStyle

BOX_PEN_WIDTH = 2.0  # screen pixels, whatever the zoom (cosmetic pen)
LABEL_PADDING = 3.0


def label_font() -> QFont:
    font = QFont()
    font.setPointSizeF(9.0)
    font.setBold(True)
    return font


class LabelItem(QGraphicsItem):
    """Text on a filled background, drawn in screen pixels (ignores the view's zoom).

    Its origin is the box's top-left corner; it sits just above the box, or just
    inside it when that would leave the scene (box touching the image top).
    """

    def __init__(self, text: str, color: QColor, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self._text = text
        self._color = QColor(color)
        self._font = label_font()
        metrics = QFontMetricsF(self._font)
        self._text_width = metrics.horizontalAdvance(text)
        self._ascent = metrics.ascent()
        self._height = metrics.height() + 2 * LABEL_PADDING
        self._width = self._text_width + 2 * LABEL_PADDING
        self._inside = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, True)

    def text(self) -> str:
        return self._text

    def set_inside(self, inside: bool) -> None:
        """Place the label inside the box's top edge instead of above it."""
        if inside != self._inside:
            self.prepareGeometryChange()
            self._inside = inside

    def _rect(self) -> QRectF:
        # Offset by half the box pen so the label is flush with the drawn line.
        half = BOX_PEN_WIDTH / 2
        top = -half if self._inside else -self._height - half + 1
        return QRectF(-half, top, self._width, self._height)

    def boundingRect(self) -> QRectF:
        return self._rect()

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        rect = self._rect()
        painter.fillRect(rect, self._color)
        painter.setFont(self._font)
        painter.setPen(text_color_on(self._color))
        baseline = QPointF(rect.left() + LABEL_PADDING, rect.top() + LABEL_PADDING + self._ascent)
        painter.drawText(baseline, self._text)


class DetectionItem(QGraphicsRectItem):
    """A detection box in scene (= image pixel) coordinates, with its label as a child (and
    its mask behind the box, its keypoints over it)."""

    def __init__(
        self, detection: Detection, style: OverlayStyle | None = None, color: QColor | None = None
    ) -> None:
        x1, y1, x2, y2 = (float(v) for v in detection.box)
        super().__init__(QRectF(x1, y1, x2 - x1, y2 - y1))
        self.detection = detection
        color = (
            QColor(color) if color is not None else class_color(detection.class_id)
        )  # default: the class's
        pen = QPen(color, BOX_PEN_WIDTH)
        pen.setCosmetic(True)  # constant on-screen width at any zoom
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        self.setPen(pen)
        self.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        self.label_item = LabelItem(detection_label(detection.label, detection.score), color, self)
        self.label_item.setPos(x1, y1)
        self.label_item.set_inside(y1 < 1.0)
        self.setToolTip(f"{detection.label} (class {detection.class_id})  score {detection.score:.3f}")
        style = style or OverlayStyle()
        self.mask_item: MaskItem | None = None
        self.keypoints_item: KeypointsItem | None = None
        if detection.mask is not None:
            self.mask_item = MaskItem(detection.mask, color, self)
            self.mask_item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemStacksBehindParent, True)
            self.mask_item.setOpacity(style.mask_opacity)
        if detection.keypoints:
            self.keypoints_item = KeypointsItem(
                detection.keypoints, style.skeleton, color, style.keypoint_names, self, style.keypoint_dots
            )
