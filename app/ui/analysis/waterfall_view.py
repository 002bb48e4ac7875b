"""WaterfallView: one traced request's spans as a waterfall (app.inference.tracing.waterfall).

A row per span, indented by its depth, its label on the left ("queue 12.3 ms (face_detector)",
"waited 31.0 ms for a free slot: in flight 2 of 2"), its bar on the right, placed and sized
on the request's own time axis; client stages, the server's and the network's in their own
colours, the gaps no stage accounts for in grey. Painting only: no clock, no I/O.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.inference.tracing.spans import RequestTrace
from app.inference.tracing.waterfall import Row, rows

COLOURS = {
    "client": QColor(66, 133, 244),
    "server": QColor(52, 168, 83),
    "network": QColor(251, 140, 0),
    "gap": QColor(170, 170, 170),
}
INDENT_PX = 12
LABEL_SHARE = 0.5  # of the width, for the labels


class WaterfallView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Row] = []
        self.total_ms = 0.0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self.setMouseTracking(True)

    def set_trace(self, trace: RequestTrace | None) -> None:
        self.rows = rows(trace) if trace is not None else []
        self.total_ms = self.rows[0].ms if self.rows else 0.0
        self.updateGeometry()
        self.update()

    def row_texts(self) -> list[str]:
        """The labels as shown, indented by depth (what a test or a copy reads)."""
        return ["  " * row.depth + row.label for row in self.rows]

    def _row_height(self) -> int:
        return self.fontMetrics().height() + 4

    def sizeHint(self) -> QSize:
        return QSize(520, max(1, len(self.rows)) * self._row_height() + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(240, max(1, len(self.rows)) * self._row_height() + 4)

    def bar_rect(self, index: int) -> QRectF:
        """Where row `index`'s bar is drawn (the tests check the geometry)."""
        row = self.rows[index]
        left = self.width() * LABEL_SHARE
        span = max(1.0, self.width() - left - 4)
        scale = span / self.total_ms if self.total_ms > 0 else 0.0
        h = self._row_height()
        return QRectF(left + row.start_ms * scale, index * h + 2, max(1.0, row.ms * scale), h - 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        palette = self.palette()
        painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Base))
        h = self._row_height()
        label_width = int(self.width() * LABEL_SHARE) - 6
        metrics = self.fontMetrics()
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        for i, row in enumerate(self.rows):
            x = 4 + row.depth * INDENT_PX
            text = metrics.elidedText(row.label, Qt.TextElideMode.ElideRight, max(10, label_width - x))
            painter.drawText(QRectF(x, i * h, label_width - x, h), int(Qt.AlignmentFlag.AlignVCenter), text)
            painter.fillRect(self.bar_rect(i), COLOURS.get(row.kind, COLOURS["client"]))
        painter.end()

    def event(self, e: object) -> bool:
        if isinstance(e, QHelpEvent):
            index = int(e.pos().y() // self._row_height())
            if 0 <= index < len(self.rows):
                row = self.rows[index]
                where = f" ({row.model})" if row.model else ""
                QToolTip.showText(
                    e.globalPos(),
                    f"{row.name}{where}: {row.start_ms:.2f} to {row.end_ms:.2f} ms ({row.ms:.2f} ms)",
                    self,
                )
            else:
                QToolTip.hideText()
            return True
        return super().event(e)  # type: ignore[arg-type]
