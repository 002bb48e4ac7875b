"""LivePlot: latency p50 (ms, left axis) and throughput (req/s, right axis) over the last 60 s."""

from __future__ import annotations

import collections
import math
from typing import NamedTuple

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from app.ui.widgets.plot_base import PlotBase

WINDOW_S = 60.0
LATENCY_COLOR = QColor(230, 120, 20)
THROUGHPUT_COLOR = QColor(30, 120, 200)


class PlotPoint(NamedTuple):
    t: float  # time.monotonic() seconds
    latency_ms: float | None
    throughput: float


def nice_ceiling(value: float) -> float:
    """The smallest "round" number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k) >= value."""
    value = max(value, 1e-9)
    exp = math.floor(math.log10(value))
    for mant in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        # Divide for negative exponents: 3 / 10 is 0.3, 3 * 0.1 is 0.30000000000000004.
        candidate = mant * 10**exp if exp >= 0 else mant / 10 ** (-exp)
        if candidate >= value * (1 - 1e-12):
            return candidate
    return 10.0 ** (exp + 1)


def axis_max(data_max: float, ticks: int) -> float:
    """An axis top that divides into `ticks` round steps and holds `data_max` (1 for a series
    that is all zeros, e.g. no request in the last minute: never an axis of 0.0000001)."""
    if not data_max > 0:
        data_max = 1.0
    return nice_ceiling(data_max / ticks) * ticks


def format_tick(value: float) -> str:
    if abs(value - round(value)) < 1e-9:
        return f"{value:.0f}"
    if abs(value) < 0.01:  # tiny steps keep two significant digits ("0.0016", not "0.002")
        return f"{value:.2g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


class LivePlot(PlotBase):
    """Feed with `add_point(t_monotonic, latency_ms, throughput)`; points older than 60 s
    (relative to the newest point) are dropped. The right edge of the plot is the
    newest point's time."""

    TICKS = 4  # horizontal grid lines (each y axis is divided the same way)

    def __init__(self, parent: QWidget | None = None, window_s: float = WINDOW_S) -> None:
        super().__init__(QSize(220, 120), QSize(360, 160), parent)
        self._window_s = window_s
        self._points: collections.deque[PlotPoint] = collections.deque()

    # --- data -------------------------------------------------------------------

    def add_point(self, t_monotonic: float, latency_ms: float | None, throughput: float) -> None:
        self._points.append(PlotPoint(float(t_monotonic), latency_ms, float(throughput)))
        horizon = t_monotonic - self._window_s
        while self._points and self._points[0].t < horizon:
            self._points.popleft()
        self.update()

    def clear(self) -> None:
        self._points.clear()
        self.update()

    def points(self) -> list[PlotPoint]:
        return list(self._points)

    def y_ranges(self) -> tuple[float, float]:
        """(latency axis max in ms, throughput axis max in req/s) for the points shown."""
        lat = [p.latency_ms for p in self._points if p.latency_ms is not None]
        thr = [p.throughput for p in self._points]
        return axis_max(max(lat, default=1.0), self.TICKS), axis_max(max(thr, default=1.0), self.TICKS)

    # --- painting ------------------------------------------------------------------

    def tick_labels(self, axis_top: float) -> list[str]:
        return [format_tick(axis_top * i / self.TICKS) for i in range(self.TICKS + 1)]

    def plot_rect(self, metrics: QFontMetricsF) -> QRectF:
        """The data area: room on each side for the widest tick label of that axis (every
        label, not just the top one: "0.25" is wider than "1")."""
        lat_max, thr_max = self.y_ranges()
        left = max(metrics.horizontalAdvance(t) for t in self.tick_labels(lat_max)) + 12
        right = max(metrics.horizontalAdvance(t) for t in self.tick_labels(thr_max)) + 12
        top = metrics.height() + 8
        bottom = metrics.height() * 2 + 8
        return QRectF(left, top, self.width() - left - right, self.height() - top - bottom)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text_color, metrics = self.begin_paint()
        plot = self.plot_rect(metrics)
        if plot.width() >= 10 and plot.height() >= 10:
            self._draw_y_axes(painter, plot, metrics, text_color)
            self._draw_x_axis(painter, plot, metrics, text_color)
            self._draw_titles(painter, metrics)
            self._draw_points(painter, plot)
        painter.end()

    def _draw_y_axes(self, painter: QPainter, plot: QRectF, metrics: QFontMetricsF, text: QColor) -> None:
        """Grid lines and tick labels: latency on the left, throughput on the right."""
        lat_labels, thr_labels = (self.tick_labels(top) for top in self.y_ranges())
        grid = QColor(text)
        grid.setAlpha(50)
        h = metrics.height()
        for i in range(self.TICKS + 1):
            y = plot.bottom() - i / self.TICKS * plot.height()
            painter.setPen(QPen(grid, 1))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            painter.setPen(LATENCY_COLOR)
            painter.drawText(
                QRectF(0, y - h / 2, plot.left() - 4, h),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                lat_labels[i],
            )
            painter.setPen(THROUGHPUT_COLOR)
            painter.drawText(
                QRectF(plot.right() + 4, y - h / 2, self.width() - plot.right() - 4, h),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                thr_labels[i],
            )

    def _draw_x_axis(self, painter: QPainter, plot: QRectF, metrics: QFontMetricsF, text: QColor) -> None:
        """Seconds ago, every 15 s, and the plot's frame."""
        painter.setPen(text)
        for ago in range(0, int(self._window_s) + 1, 15):
            x = plot.right() - ago / self._window_s * plot.width()
            painter.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + 3))
            label = "now" if ago == 0 else f"-{ago}"
            painter.drawText(
                QRectF(x - 30, plot.bottom() + 3, 60, metrics.height()),
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                label,
            )
        painter.drawText(
            QRectF(plot.left(), self.height() - metrics.height() - 2, plot.width(), metrics.height()),
            Qt.AlignmentFlag.AlignHCenter,
            "seconds",
        )
        painter.drawRect(plot)

    def _draw_titles(self, painter: QPainter, metrics: QFontMetricsF) -> None:
        """Axis titles at the top, coloured like their series."""
        painter.setPen(LATENCY_COLOR)
        painter.drawText(
            QRectF(2, 2, self.width() / 2, metrics.height()),
            Qt.AlignmentFlag.AlignLeft,
            "● latency p50 (ms)",
        )
        painter.setPen(THROUGHPUT_COLOR)
        painter.drawText(
            QRectF(self.width() / 2, 2, self.width() / 2 - 2, metrics.height()),
            Qt.AlignmentFlag.AlignRight,
            "requests/s ●",
        )

    def _draw_points(self, painter: QPainter, plot: QRectF) -> None:
        if not self._points:
            return
        lat_max, thr_max = self.y_ranges()
        now = self._points[-1].t

        def x_of(t: float) -> float:
            return plot.right() - (now - t) / self._window_s * plot.width()

        painter.setClipRect(plot.adjusted(-1, -1, 1, 1))
        throughput = [(x_of(p.t), p.throughput / thr_max) for p in self._points]
        latency = [(x_of(p.t), p.latency_ms / lat_max) for p in self._points if p.latency_ms is not None]
        self._draw_series(painter, throughput, plot, THROUGHPUT_COLOR)
        self._draw_series(painter, latency, plot, LATENCY_COLOR)

    @staticmethod
    def _draw_series(painter: QPainter, xy: list[tuple[float, float]], plot: QRectF, color: QColor) -> None:
        if not xy:
            return
        path = QPainterPath()
        for i, (x, frac) in enumerate(xy):
            point = QPointF(x, plot.bottom() - frac * plot.height())
            if i == 0:
                path.moveTo(point)
            else:
                path.lineTo(point)
        painter.setPen(QPen(color, 2))
        painter.drawPath(path)
        if len(xy) == 1:
            painter.setBrush(color)
            painter.drawEllipse(path.currentPosition(), 2.5, 2.5)
            painter.setBrush(Qt.BrushStyle.NoBrush)
