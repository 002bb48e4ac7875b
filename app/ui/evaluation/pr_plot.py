"""Precision-recall curves at IoU 0.5, one per class in its class colour, with each class's
operating point (the score threshold in use) marked; painted with QPainter like the live plot."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QWidget

from app.ui.evaluation.axes import upright_title
from app.ui.widgets.plot_base import PlotBase

TICKS = 5
LEGEND_LINES = 8  # classes named in the legend at most (the rest: "+ N more")


@dataclass(frozen=True)
class Curve:
    name: str
    color: QColor
    recall: np.ndarray
    precision: np.ndarray | None  # None: the class has no labelled object
    ap50: float | None
    point: tuple[float, float] | None = None  # (recall, precision) at the operating point


class PrCurves(PlotBase):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(QSize(220, 150), QSize(340, 280), parent)
        self.curves: list[Curve] = []

    def set_curves(self, curves: list[Curve]) -> None:
        self.curves = list(curves)
        self.update()

    def plot_rect(self) -> QRectF:
        m = QFontMetricsF(self.font())
        left = m.horizontalAdvance("0.8") + m.height() + 10
        top, bottom = m.height() / 2 + 4, m.height() * 2 + 6
        width = max(self.width() - left - 12, 0.0)
        height = max(self.height() - top - bottom, 0.0)
        return QRectF(left, top, min(width, 2 * height), height)  # never flatter than 2:1

    def to_widget(self, recall: float, precision: float) -> QPointF:
        plot = self.plot_rect()
        return QPointF(plot.left() + recall * plot.width(), plot.bottom() - precision * plot.height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text, _metrics = self.begin_paint()
        plot = self.plot_rect()
        if plot.width() < 20:
            painter.end()
            return
        m = QFontMetricsF(self.font())
        line = m.height()
        grid = QColor(text)
        grid.setAlpha(45)
        for i in range(TICKS + 1):
            v = i / TICKS
            painter.setPen(QPen(grid, 1))
            a, b = self.to_widget(v, 0), self.to_widget(v, 1)
            painter.drawLine(a, b)
            c, d = self.to_widget(0, v), self.to_widget(1, v)
            painter.drawLine(c, d)
            painter.setPen(text)
            label = f"{v:.1f}"
            painter.drawText(
                QRectF(a.x() - 20, plot.bottom() + 2, 40, line), Qt.AlignmentFlag.AlignHCenter, label
            )
            painter.drawText(
                QRectF(0, c.y() - line / 2, plot.left() - 4, line),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                label,
            )
        painter.setPen(text)
        painter.drawRect(plot)
        painter.drawText(
            QRectF(plot.left(), plot.bottom() + line + 2, plot.width(), line),
            Qt.AlignmentFlag.AlignHCenter,
            "recall",
        )
        upright_title(painter, 0, plot.top(), plot.height(), line, "precision")
        if not self.curves:
            painter.drawText(plot, Qt.AlignmentFlag.AlignCenter, "No evaluation yet")
            painter.end()
            return
        painter.setClipRect(plot.adjusted(-4, -4, 4, 4))
        for curve in self.curves:
            if curve.precision is None:
                continue
            path = QPainterPath()
            for i, (r, p) in enumerate(zip(curve.recall, curve.precision, strict=True)):
                point = self.to_widget(float(r), float(p))
                if i == 0:
                    path.moveTo(point)
                else:
                    path.lineTo(point)
            painter.setPen(QPen(curve.color, 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(path)
        for curve in self.curves:
            if curve.point is not None:
                painter.setPen(QPen(QColor(255, 255, 255), 1.5))
                painter.setBrush(curve.color)
                painter.drawEllipse(self.to_widget(*curve.point), 5, 5)
        painter.setClipping(False)
        self._legend(painter, plot, m)
        painter.end()

    def _legend(self, painter: QPainter, plot: QRectF, m: QFontMetricsF) -> None:
        """Bottom-left inside the plot (where PR curves rarely go): each class and its AP50."""
        rows = [
            (c.color, f"{c.name}  AP50 {c.ap50:.3f}" if c.ap50 is not None else f"{c.name}  no objects")
            for c in self.curves[:LEGEND_LINES]
        ]
        if len(self.curves) > LEGEND_LINES:
            rows.append((QColor(0, 0, 0, 0), f"+ {len(self.curves) - LEGEND_LINES} more"))
        line = m.height()
        width = max(m.horizontalAdvance(text) for _, text in rows) + line + 12
        box = QRectF(plot.left() + 6, plot.bottom() - 6 - line * len(rows) - 6, width, line * len(rows) + 6)
        background = self.palette().color(QPalette.ColorRole.Base)
        background.setAlpha(220)
        painter.fillRect(box, background)
        for i, (color, text) in enumerate(rows):
            y = box.top() + 3 + i * line
            painter.fillRect(QRectF(box.left() + 4, y + line / 2 - 2, line - 2, 4), color)
            painter.setPen(self.palette().color(QPalette.ColorRole.Text))
            painter.drawText(
                QRectF(box.left() + line + 6, y, width, line), Qt.AlignmentFlag.AlignVCenter, text
            )
