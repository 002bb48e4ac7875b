"""ZonesItem: the counting lines and zones over the picture, with their live counts (a line's
in and out, a zone's occupancy now and at most), the arrow of each line's `in` direction, the
vertices the editor drags, and the shape being drawn. Scene coordinates are source pixels;
everything is painted in device pixels (constant size on screen at any zoom)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen, QPolygonF, QTransform
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from app.analytics.stream import AnalyticsSnapshot
from app.analytics.zones_file import Point, ZonesConfig
from app.ui.view.overlay_items import ZoomFollowingItem

LINE_COLOR = QColor(255, 196, 0)
ZONE_COLOR = QColor(0, 188, 255)
DRAFT_COLOR = QColor(255, 255, 255)
LABEL_BACK = QColor(20, 20, 20, 190)
HANDLE = 6.0  # device pixels: a vertex's square
ARROW = 14.0  # device pixels: the `in` arrow's length
LABEL_MARGIN = 260.0  # device pixels a label may reach beyond its shape


class ZonesItem(ZoomFollowingItem):
    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.config = ZonesConfig()
        self.snapshot: AnalyticsSnapshot | None = None
        self.draft: list[Point] = []  # the shape being drawn (a line's a, a zone's vertices)
        self.draft_cursor: Point | None = None  # where the mouse is while drawing
        self.counting = True  # False: tracking is off, the labels say so
        self._font = QFont()
        self._font.setPixelSize(12)
        self._font.setBold(True)
        self._metrics = QFontMetricsF(self._font)
        self._bounds = QRectF()
        self.setZValue(4)  # over boxes, masks and trails

    def set_config(self, config: ZonesConfig) -> None:
        self.config = config
        self._changed()

    def set_snapshot(self, snapshot: AnalyticsSnapshot | None) -> None:
        self.snapshot = snapshot
        self.update()

    def set_draft(self, points: Sequence[Point], cursor: Point | None) -> None:
        self.draft, self.draft_cursor = list(points), cursor
        self._changed()

    def _changed(self) -> None:
        self.prepareGeometryChange()
        points = [p for line in self.config.lines for p in (line.a, line.b)]
        points += [p for zone in self.config.zones for p in zone.polygon]
        points += self.draft + ([self.draft_cursor] if self.draft_cursor is not None else [])
        if points:
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            self._bounds = QRectF(min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
        else:
            self._bounds = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:
        if self._bounds.isNull() and not self.draft:
            return QRectF()
        margin = LABEL_MARGIN / self._scale
        return self._bounds.adjusted(-margin, -margin, margin, margin)

    # -- painting ---------------------------------------------------------------------------------
    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        to_device = painter.worldTransform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(self._font)
        snapshot = self.snapshot
        for zone in self.config.zones:
            corners = [to_device.map(QPointF(*p)) for p in zone.polygon]
            polygon = QPolygonF(corners)
            fill = QColor(ZONE_COLOR)
            fill.setAlpha(45)
            painter.setPen(QPen(ZONE_COLOR, 2))
            painter.setBrush(QBrush(fill))
            painter.drawPolygon(polygon)
            self._handles(painter, corners, ZONE_COLOR)
            now, most = snapshot.zones.get(zone.name, (0, 0)) if snapshot is not None else (0, 0)
            top = min(corners, key=lambda q: (q.y(), q.x()))
            self._label(painter, top + QPointF(4, 4), f"{zone.name}  {now} now · max {most}", ZONE_COLOR)
        for line in self.config.lines:
            a, b = to_device.map(QPointF(*line.a)), to_device.map(QPointF(*line.b))
            painter.setPen(QPen(LINE_COLOR, 3, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
            painter.drawLine(a, b)
            self._arrow(painter, a, b)
            self._handles(painter, [a, b], LINE_COLOR)
            counts = snapshot.lines.get(line.name, (0, 0)) if snapshot is not None else (0, 0)
            text = f"{line.name}  in {counts[0]} · out {counts[1]}"
            self._label(painter, (a + b) / 2 + QPointF(8, 6), text, LINE_COLOR)
        self._draft(painter, to_device)
        painter.restore()

    def _arrow(self, painter: QPainter, a: QPointF, b: QPointF) -> None:
        """At the middle, across the line, pointing the way a crossing counts as `in` (from the
        side where cross(b - a, p - a) > 0 to the other: for a line drawn downwards, to the right)."""
        dx, dy = b.x() - a.x(), b.y() - a.y()
        length = math.hypot(dx, dy)
        if length == 0:
            return
        ux, uy = dy / length, -dx / length  # the `in` direction
        start = (a + b) / 2
        tip = start + QPointF(ux * ARROW, uy * ARROW)
        painter.drawLine(start, tip)
        back = QPointF(-ux * 5, -uy * 5)
        side = QPointF(-uy * 4, ux * 4)
        painter.setBrush(QBrush(LINE_COLOR))
        painter.drawPolygon(QPolygonF([tip + QPointF(ux * 3, uy * 3), tip + back + side, tip + back - side]))

    def _handles(self, painter: QPainter, points: Sequence[QPointF], color: QColor) -> None:
        painter.setPen(QPen(color, 1.5))
        painter.setBrush(QBrush(QColor(255, 255, 255)))
        for p in points:
            painter.drawRect(QRectF(p.x() - HANDLE / 2, p.y() - HANDLE / 2, HANDLE, HANDLE))

    def _label(self, painter: QPainter, at: QPointF, text: str, color: QColor) -> None:
        if not self.counting:
            text += "  (tracking off)"
        width = self._metrics.horizontalAdvance(text) + 8
        height = self._metrics.height() + 4
        box = QRectF(round(at.x()), round(at.y()), math.ceil(width), math.ceil(height))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(LABEL_BACK))
        painter.drawRoundedRect(box, 3, 3)
        painter.setPen(QPen(color))
        painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    def _draft(self, painter: QPainter, to_device: QTransform) -> None:
        points = [to_device.map(QPointF(*p)) for p in self.draft]
        if self.draft_cursor is not None and points:
            points.append(to_device.map(QPointF(*self.draft_cursor)))
        if not points:
            return
        painter.setPen(QPen(DRAFT_COLOR, 2, Qt.PenStyle.DashLine))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPolyline(QPolygonF(points))
        self._handles(painter, points[: len(self.draft)], DRAFT_COLOR)
