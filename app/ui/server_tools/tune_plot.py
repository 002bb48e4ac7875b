"""The tune's plot: every measured level of every trial as throughput against p95 latency (one
colour per trial, squares for the original config), the Pareto front as a line (no other
point has both more throughput and a lower p95), the recommendation ringed, and the latency
budget as a dashed line when one was given. Drawn with QPainter like the load test's plot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QWidget

from app.pipeline.sweep import LevelResult
from app.pipeline.tune_analysis import Point, Recommendation, TrialResult
from app.pipeline.tune_settings import TrialSettings
from app.ui.widgets.live_plot import axis_max, format_tick
from app.ui.widgets.plot_base import PlotBase

# Ten colours told apart easily (matplotlib's "tab10"), one per trial, in turn.
TRIAL_COLORS = tuple(
    QColor(c)
    for c in (
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
    )
)
FRONT_COLOR = QColor(20, 20, 20)
RECOMMENDED_COLOR = QColor(40, 160, 60)
BUDGET_COLOR = QColor(200, 40, 40)
TICKS = 4
EMPTY_TEXT = "Press Start: each trial's levels appear as they are measured"


def trial_color(index: int) -> QColor:
    return TRIAL_COLORS[index % len(TRIAL_COLORS)]


def short_settings(settings: TrialSettings) -> str:
    """e.g. "2 inst · batch 16 · 2000 us" (the legend's width is limited)."""
    delay = "off" if settings.max_queue_delay_us is None else f"{settings.max_queue_delay_us} us"
    return f"{settings.instances} inst · batch {settings.max_batch_size} · {delay}"


@dataclass(frozen=True)
class PlotPoint:
    trial: int  # index into the trials
    level: LevelResult


LABEL_GAP = 5.0
MARKER_R = 4.5


def _spots(point: QPointF, width: float, height: float) -> list[QRectF]:
    """Where a point's label may go, best first: right-below, right-above, left-below,
    left-above, under it, over it."""
    x, y, g = point.x(), point.y(), LABEL_GAP
    corners = [
        (x + g, y + g / 2),
        (x + g, y - height - g / 2),
        (x - width - g, y + g / 2),
        (x - width - g, y - height - g / 2),
        (x - width / 2, y + MARKER_R + 1),
        (x - width / 2, y - height - MARKER_R - 1),
    ]
    return [QRectF(cx, cy, width, height) for cx, cy in corners]


def place_labels(
    anchors: Sequence[tuple[QPointF, float, float]], bounds: QRectF, taken: Sequence[QRectF] = ()
) -> list[QRectF | None]:
    """A rect for each label ((point, width, height)), beside its point, inside `bounds`,
    overlapping no other label, no other marker and nothing in `taken`; None: no free spot
    (the label is left out rather than drawn over another)."""
    placed: list[QRectF] = list(taken)
    r = MARKER_R
    markers = [QRectF(p.x() - r, p.y() - r, 2 * r, 2 * r) for p, _w, _h in anchors]
    out: list[QRectF | None] = []
    for index, (point, width, height) in enumerate(anchors):
        others = markers[:index] + markers[index + 1 :]
        chosen = next(
            (
                rect
                for rect in _spots(point, width, height)
                if bounds.contains(rect)
                and not any(rect.intersects(o) for o in placed)
                and not any(rect.intersects(m) for m in others)
            ),
            None,
        )
        if chosen is not None:
            placed.append(chosen)
        out.append(chosen)
    return out


class TunePlot(PlotBase):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(QSize(360, 220), QSize(640, 320), parent)
        self.trials: list[TrialResult] = []
        self.front: list[Point] = []
        self.recommendation: Recommendation | None = None
        self.budget_ms: float | None = None
        self.label_rects: list[QRectF | None] = []  # where the points' labels went (last paint)

    def set_data(
        self,
        trials: Sequence[TrialResult],
        front: Sequence[Point],
        recommendation: Recommendation | None = None,
        budget_ms: float | None = None,
    ) -> None:
        self.trials = list(trials)
        self.front = list(front)
        self.recommendation = recommendation
        self.budget_ms = budget_ms
        self.update()

    def points(self) -> list[PlotPoint]:
        """What is drawn: every usable level (measured, no request lost) of every trial."""
        return [PlotPoint(i, lv) for i, t in enumerate(self.trials) for lv in t.usable_levels()]

    # -- painting --------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text, metrics = self.begin_paint()
        points = self.points()
        if not points:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, EMPTY_TEXT)
            painter.end()
            return
        p95s = [p.level.p95_ms or 0.0 for p in points] + ([self.budget_ms] if self.budget_ms else [])
        # A little headroom: the best point (often the recommendation) is not drawn on the frame.
        x_top = axis_max(max(p95s) * 1.05, TICKS)
        y_top = axis_max(max(p.level.throughput for p in points) * 1.05, TICKS)
        y_labels = [format_tick(y_top * i / TICKS) for i in range(TICKS + 1)]
        legend = [
            f"{i + 1}{'*' if t.original else ''}  {short_settings(t.settings)}"
            for i, t in enumerate(self.trials)
        ]
        legend_w = max(metrics.horizontalAdvance(s) for s in legend) + 24
        left = max(metrics.horizontalAdvance(s) for s in y_labels) + 12
        h = metrics.height()
        plot = QRectF(left, h + 8, self.width() - left - legend_w - 12, self.height() - 3 * h - 16)
        if plot.width() < 40 or plot.height() < 40:
            painter.end()
            return

        def xy(level: LevelResult) -> QPointF:
            return QPointF(
                plot.left() + (level.p95_ms or 0.0) / x_top * plot.width(),
                plot.bottom() - level.throughput / y_top * plot.height(),
            )

        self._axes(painter, plot, metrics, text, x_top, y_labels)
        if self.budget_ms:
            x = plot.left() + self.budget_ms / x_top * plot.width()
            painter.setPen(QPen(BUDGET_COLOR, 1.5, Qt.PenStyle.DashLine))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            painter.drawText(QPointF(x + 4, plot.top() + metrics.ascent() + 2), "budget")
        if len(self.front) > 1:
            path = QPainterPath()
            for i, p in enumerate(sorted(self.front, key=lambda p: p.level.p95_ms or 0.0)):
                path.moveTo(xy(p.level)) if i == 0 else path.lineTo(xy(p.level))
            painter.setPen(QPen(FRONT_COLOR, 1.5, Qt.PenStyle.DashLine))
            painter.drawPath(path)
        front_ids = {id(p.level) for p in self.front}
        for point in points:
            self._marker(painter, xy(point.level), point, id(point.level) in front_ids)
        rec = self.recommendation
        taken: list[QRectF] = []  # the recommendation's ring and label: point labels keep off
        if rec is not None:
            where = xy(rec.level)
            label = f"recommended: {rec.level.throughput:.0f} req/s"
            width = metrics.horizontalAdvance(label)
            # Beside the ring, inside the plot: right of it, or left when there is no room.
            x = where.x() + 14 if where.x() + 14 + width < plot.right() - 2 else where.x() - 14 - width
            y = min(
                max(where.y() + metrics.ascent() / 2 - 1, plot.top() + metrics.ascent() + 2),
                plot.bottom() - 4,
            )
            painter.setPen(QPen(RECOMMENDED_COLOR, 2.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(where, 10, 10)
            painter.drawText(QPointF(x, y), label)
            taken = [
                QRectF(where.x() - 11, where.y() - 11, 22, 22),
                QRectF(x, y - metrics.ascent(), width, h),
            ]
        anchors = [(xy(p.level), metrics.horizontalAdvance(str(p.level.concurrency)), h) for p in points]
        self.label_rects = place_labels(anchors, plot, taken)
        for point, spot in zip(points, self.label_rects, strict=True):
            if spot is not None:
                painter.setPen(trial_color(point.trial).darker(150))
                painter.drawText(spot, Qt.AlignmentFlag.AlignCenter, str(point.level.concurrency))
        self._legend(painter, QRectF(plot.right() + 12, plot.top(), legend_w, plot.height()), legend, metrics)
        painter.end()

    def _axes(
        self,
        painter: QPainter,
        plot: QRectF,
        metrics: QFontMetricsF,
        text: QColor,
        x_top: float,
        y_labels: list[str],
    ) -> None:
        grid = QColor(text)
        grid.setAlpha(50)
        h = metrics.height()
        for i in range(TICKS + 1):
            y = plot.bottom() - i / TICKS * plot.height()
            x = plot.left() + i / TICKS * plot.width()
            painter.setPen(QPen(grid, 1))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            painter.setPen(text)
            painter.drawText(
                QRectF(0, y - h / 2, plot.left() - 4, h),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                y_labels[i],
            )
            painter.drawText(
                QRectF(x - 40, plot.bottom() + 2, 80, h),
                Qt.AlignmentFlag.AlignHCenter,
                format_tick(x_top * i / TICKS),
            )
        painter.drawRect(plot)
        painter.drawText(
            QRectF(plot.left(), self.height() - h - 2, plot.width(), h),
            Qt.AlignmentFlag.AlignHCenter,
            "latency p95 (ms)",
        )
        painter.drawText(
            QRectF(2, 2, self.width(), h),
            Qt.AlignmentFlag.AlignLeft,
            "throughput (req/s); beside each point: its requests in flight",
        )

    def _marker(self, painter: QPainter, where: QPointF, point: PlotPoint, on_front: bool) -> None:
        color = trial_color(point.trial)
        painter.setPen(QPen(FRONT_COLOR if on_front else color.darker(130), 1.5 if on_front else 1))
        painter.setBrush(color)
        if self.trials[point.trial].original:
            painter.drawRect(QRectF(where.x() - 4.5, where.y() - 4.5, 9, 9))
        else:
            painter.drawEllipse(where, 4.5, 4.5)
        painter.setBrush(Qt.BrushStyle.NoBrush)

    def _legend(self, painter: QPainter, area: QRectF, lines: list[str], metrics: QFontMetricsF) -> None:
        """One line per trial (* the original config), then the front's and the ring's keys."""
        h = metrics.height() + 2
        text = self.palette().color(QPalette.ColorRole.Text)
        rows = len(lines) + 2
        for i in range(rows):
            y = area.top() + i * h
            if y + 2 * h > area.bottom() and i < len(lines):
                painter.setPen(text)
                painter.drawText(QPointF(area.left(), y + metrics.ascent()), f"… {len(lines) - i} more")
                break
            mid = QPointF(area.left() + 4.5, y + h / 2)
            if i < len(lines):
                color = trial_color(i)
                painter.setBrush(color)
                painter.setPen(color.darker(130))
                marker = QRectF(mid.x() - 4.5, mid.y() - 4.5, 9, 9)
                painter.drawRect(marker) if self.trials[i].original else painter.drawEllipse(marker)
                label = lines[i]
            elif i == len(lines):
                painter.setPen(QPen(FRONT_COLOR, 1.5, Qt.PenStyle.DashLine))
                painter.drawLine(QPointF(mid.x() - 5, mid.y()), QPointF(mid.x() + 5, mid.y()))
                label = "Pareto front"
            else:
                painter.setPen(QPen(RECOMMENDED_COLOR, 2))
                painter.drawEllipse(mid, 5, 5)
                label = "recommended"
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(text)
            painter.drawText(QPointF(area.left() + 14, y + metrics.ascent() + 1), label)
