"""Short trails of tracked objects over the image: each track's recent box centres joined by a
line in the track's colour, with its id at the head. Scene coordinates are image pixels."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.pipeline.tracking import Track

TRAIL_WIDTH = 2.5  # screen pixels, whatever the zoom
HEAD_RADIUS = 3.0


def track_color(track_id: int) -> QColor:
    """A track's colour: vivid hues a golden angle apart, so ids 1, 2, 3 differ strongly."""
    return QColor.fromHsvF((0.13 + track_id * 0.618034) % 1.0, 0.9, 1.0)


class TrailsItem(QGraphicsItem):
    """The trails of the tracks still followed; `set_tracks()` replaces them."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.trails: list[tuple[int, list[QPointF]]] = []
        self._bounds = QRectF()
        self._font = QFont()
        self._font.setPointSizeF(8.0)
        self._font.setBold(True)
        self.setZValue(3)  # over boxes and masks

    def set_tracks(self, tracks: Sequence[Track]) -> None:
        self.prepareGeometryChange()
        self.trails = [(t.track_id, [QPointF(x, y) for x, y in t.trail]) for t in tracks if t.trail]
        points = [p for _, trail in self.trails for p in trail]
        if points:
            xs, ys = [p.x() for p in points], [p.y() for p in points]
            self._bounds = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        else:
            self._bounds = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:
        # Generous margin for the pen, the head dot and the id text (drawn in screen pixels).
        return self._bounds.adjusted(-60, -40, 60, 40) if self.trails else QRectF()

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        to_device = painter.worldTransform()
        painter.save()
        painter.resetTransform()  # draw in device pixels: constant widths at any zoom
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setFont(self._font)
        for track_id, trail in self.trails:
            color = track_color(track_id)
            device = [to_device.map(p) for p in trail]
            painter.setPen(QPen(color, TRAIL_WIDTH))
            if len(device) > 1:
                painter.drawPolyline(QPolygonF(device))
            head = device[-1]
            painter.setBrush(color)
            painter.drawEllipse(head, HEAD_RADIUS, HEAD_RADIUS)
            painter.drawText(head + QPointF(5, -5), f"#{track_id}")
        painter.restore()
