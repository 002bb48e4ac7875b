"""The Server view's short history: utilisation in percent on the left axis (CPU, and GPU when
reported), pending requests on the right, over the last two minutes (now at the right)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from app.ui.widgets.live_plot import axis_max, format_tick
from app.ui.widgets.plot_base import PlotBase

WINDOW_S = 120.0
TICKS = 4
CPU_COLOR = QColor(30, 120, 200)
GPU_COLOR = QColor(40, 160, 60)
PENDING_COLOR = QColor(230, 120, 20)


@dataclass(frozen=True)
class Series:
    title: str
    color: QColor
    points: Sequence[tuple[float, float]]  # (seconds ago, value), oldest first
    right: bool = False  # on the right axis (counts) rather than the left (percent)


class MetricsPlot(PlotBase):
    def __init__(self, parent: QWidget | None = None, window_s: float = WINDOW_S) -> None:
        super().__init__(QSize(220, 110), QSize(360, 150), parent)
        self.window_s = window_s
        self.series: list[Series] = []

    def set_series(self, series: Sequence[Series]) -> None:
        self.series = list(series)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text, metrics = self.begin_paint()
        h = metrics.height()
        counts = [v for s in self.series if s.right for _, v in s.points]
        # Counts: whole-number ticks at least (0..4 when nothing is pending).
        right_max = axis_max(max(max(counts, default=0.0), float(TICKS)), TICKS)
        left_labels = [f"{format_tick(100 * i / TICKS)}%" for i in range(TICKS + 1)]
        right_labels = [format_tick(right_max * i / TICKS) for i in range(TICKS + 1)]
        left = max(metrics.horizontalAdvance(t) for t in left_labels) + 10
        right = max(metrics.horizontalAdvance(t) for t in right_labels) + 10
        plot = QRectF(left, h + 6, self.width() - left - right, self.height() - 2 * h - 12)
        if plot.width() < 20 or plot.height() < 20:
            painter.end()
            return
        grid = QColor(text)
        grid.setAlpha(50)
        for i in range(TICKS + 1):
            y = plot.bottom() - i / TICKS * plot.height()
            painter.setPen(QPen(grid, 1))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            painter.setPen(text)
            middle = Qt.AlignmentFlag.AlignVCenter
            painter.drawText(
                QRectF(0, y - h / 2, left - 4, h), Qt.AlignmentFlag.AlignRight | middle, left_labels[i]
            )
            painter.setPen(PENDING_COLOR)
            painter.drawText(
                QRectF(plot.right() + 4, y - h / 2, right, h),
                Qt.AlignmentFlag.AlignLeft | middle,
                right_labels[i],
            )
        painter.setPen(text)
        painter.drawRect(plot)
        for tick in range(0, int(self.window_s) + 1, 30):
            x = plot.right() - tick / self.window_s * plot.width()
            label = "now" if tick == 0 else f"-{tick} s"
            painter.drawText(QRectF(x - 30, plot.bottom() + 2, 60, h), Qt.AlignmentFlag.AlignHCenter, label)
        title_x = 2.0
        for s in self.series:
            painter.setPen(s.color)
            title = f"● {s.title}"
            painter.drawText(QPointF(title_x, metrics.ascent() + 2), title)
            title_x += metrics.horizontalAdvance(title) + 12
        painter.setClipRect(plot.adjusted(-1, -1, 1, 1))
        for s in self.series:
            top = right_max if s.right else 100.0
            scale = 1.0 if s.right else 100.0  # utilisation arrives as 0..1
            path = QPainterPath()
            for i, (ago, value) in enumerate(p for p in s.points if p[0] <= self.window_s):
                point = QPointF(
                    plot.right() - ago / self.window_s * plot.width(),
                    plot.bottom() - value * scale / top * plot.height(),
                )
                path.moveTo(point) if i == 0 else path.lineTo(point)
            painter.setPen(QPen(s.color, 2))
            painter.drawPath(path)
        painter.end()
