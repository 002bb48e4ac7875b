"""Graphics items for what a model gives beyond boxes: mask fills and keypoints with their
skeleton. Scene coordinates are image pixels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSceneHoverEvent, QStyleOptionGraphicsItem, QWidget

from app.inference.decoding.keypoints import VISIBLE_SCORE
from app.inference.masks import BinaryMask
from app.inference.result import Keypoint

KEYPOINT_RADIUS = 3.5  # screen pixels, whatever the zoom
SKELETON_WIDTH = 2.0  # screen pixels
DEFAULT_MASK_OPACITY = 0.5


@dataclass(frozen=True)
class OverlayStyle:
    """How masks and keypoints are drawn: the model's skeleton and keypoint names (from its
    profile) and the mask opacity slider's value."""

    skeleton: tuple[tuple[int, int], ...] = ()
    keypoint_names: tuple[str, ...] = ()
    mask_opacity: float = DEFAULT_MASK_OPACITY
    # False (the profile's keypoint_style "lines"): the skeleton only; the points show under
    # the mouse, the nearest one named in the tooltip (a face mesh's 468 dots hide the face).
    keypoint_dots: bool = True


class MaskItem(QGraphicsItem):
    """A mask as a solid fill in one colour; translucency comes from the item's opacity."""

    def __init__(self, mask: BinaryMask, color: QColor, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.mask = mask
        # Indexed8: the 0/1 bytes are the pixels, the two-entry colour table paints them.
        # Why keep `_bytes`: QImage does not copy the buffer it is given.
        self._bytes = np.ascontiguousarray(mask.crop(), dtype=np.uint8)
        h, w = self._bytes.shape
        self._image = QImage(
            self._bytes.data, w, h, self._bytes.strides[0] if h else w, QImage.Format.Format_Indexed8
        )
        self._image.setColorTable(
            [QColor(0, 0, 0, 0).rgba(), QColor(color.red(), color.green(), color.blue()).rgba()]
        )
        self.setPos(mask.left, mask.top)
        self.color = QColor(color)

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, self._bytes.shape[1], self._bytes.shape[0])

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        if self._bytes.size:
            # Hard pixel edges: each mask pixel is one image pixel, at any zoom.
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
            painter.drawImage(QPointF(0, 0), self._image)


class KeypointsItem(QGraphicsItem):
    """Keypoints as dots of constant screen size, joined by the skeleton's lines; points
    scoring below VISIBLE_SCORE (and lines touching them) are not drawn. Without `dots`, the
    dots appear only while the mouse is over the item and the tooltip names the nearest point."""

    def __init__(
        self,
        keypoints: Sequence[Keypoint],
        skeleton: Sequence[tuple[int, int]],
        color: QColor,
        names: Sequence[str] = (),
        parent: QGraphicsItem | None = None,
        dots: bool = True,
    ) -> None:
        super().__init__(parent)
        self.dots, self._hovered = dots, False
        self.points = [QPointF(x, y) for x, y, _ in keypoints]
        self.visible = [s >= VISIBLE_SCORE for _, _, s in keypoints]
        n = len(self.points)
        self.lines = [(a, b) for a, b in skeleton if a < n and b < n and self.visible[a] and self.visible[b]]
        self.color = QColor(color)
        self._scale = 1.0  # view zoom: the dots' margin in scene units depends on it
        shown = [p for p, v in zip(self.points, self.visible, strict=True) if v]
        xs, ys = [p.x() for p in shown], [p.y() for p in shown]
        self._extent = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)) if shown else QRectF()
        self._tips = [
            f"{names[i] if i < len(names) else f'keypoint {i}'}: ({x:.0f}, {y:.0f}) {s:.2f}"
            for i, (x, y, s) in enumerate(keypoints)
        ]
        self.setAcceptHoverEvents(not dots)
        self.setToolTip("\n".join(self._tips) if dots else "")

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
        shown = [i for i, v in enumerate(self.visible) if v]
        if not shown:
            return ""
        best = min(
            shown, key=lambda i: (self.points[i].x() - pos.x()) ** 2 + (self.points[i].y() - pos.y()) ** 2
        )
        return self._tips[best]

    def visible_points(self) -> list[QPointF]:
        return [p for p, v in zip(self.points, self.visible, strict=True) if v]

    def set_view_scale(self, scale: float) -> None:
        if scale > 0 and scale != self._scale:
            self.prepareGeometryChange()
            self._scale = scale

    def boundingRect(self) -> QRectF:
        if self._extent.isNull() and not any(self.visible):
            return QRectF()
        margin = (KEYPOINT_RADIUS + SKELETON_WIDTH + 1) / self._scale
        return self._extent.adjusted(-margin, -margin, margin, margin)

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        to_device = painter.worldTransform()
        painter.save()
        # Draw in device pixels so dots and lines keep their size at any zoom.
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        pen = QPen(self.color, SKELETON_WIDTH)
        painter.setPen(pen)
        for a, b in self.lines:
            painter.drawLine(to_device.map(self.points[a]), to_device.map(self.points[b]))
        painter.setPen(QPen(QColor(255, 255, 255), 1.0))
        painter.setBrush(QBrush(self.color))
        for point in self.visible_points() if self.dots or self._hovered else ():
            painter.drawEllipse(to_device.map(point), KEYPOINT_RADIUS, KEYPOINT_RADIUS)
        painter.restore()
