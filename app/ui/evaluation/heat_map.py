"""The confusion matrix as a heat map: rows what the objects are, columns what the model said,
the last row and column background (false detections, missed objects). Each cell is shaded by
its share of its row and shows its count; clicking a cell emits it (the controller narrows the
batch's thumbnails to that cell's images), clicking it again lets go."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFontMetricsF,
    QHelpEvent,
    QMouseEvent,
    QPaintEvent,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import QToolTip, QWidget

from app.ui.evaluation.axes import upright_title
from app.ui.widgets.plot_base import PlotBase

LOW, HIGH = QColor(245, 247, 250), QColor(33, 102, 172)  # an empty cell, a whole row's share
SELECTED = QColor(255, 140, 0)
GAP = 8  # between the labels and the cells
MIN_CELL = 14


def shade(share: float) -> QColor:
    s = min(max(share, 0.0), 1.0)
    return QColor(
        round(LOW.red() + (HIGH.red() - LOW.red()) * s),
        round(LOW.green() + (HIGH.green() - LOW.green()) * s),
        round(LOW.blue() + (HIGH.blue() - LOW.blue()) * s),
    )


def cell_meaning(labels: list[str], row: int, column: int) -> str:
    """e.g. "face found", "car taken for face", "face missed", "false face"."""
    last = len(labels) - 1
    truth, said = labels[row], labels[column]
    if row == last and column == last:
        return "nothing"
    if row == last:
        return f"false {said}"
    if column == last:
        return f"{truth} missed"
    if row == column:
        return f"{truth} found"
    return f"{truth} taken for {said}"


def cell_explained(labels: list[str], row: int, column: int) -> str:
    """The meaning with what it counts, for the tooltip."""
    last = len(labels) - 1
    if row == last and column != last:
        return f"{cell_meaning(labels, row, column)}: detections where no object is labelled"
    if column == last and row != last:
        return f"{cell_meaning(labels, row, column)}: labelled objects nothing found"
    return cell_meaning(labels, row, column)


class ConfusionHeatMap(PlotBase):
    cell_clicked = Signal(int, int)  # row (truth), column (prediction); (-1, -1): let go

    def __init__(self, parent: QWidget | None = None) -> None:
        # (the minimum: a 1024x640 screen still holds the window)
        super().__init__(QSize(200, 120), QSize(340, 300), parent)
        self.labels: list[str] = []
        self.matrix = np.zeros((0, 0), np.int64)
        self.selected: tuple[int, int] | None = None
        self.setMouseTracking(True)

    def set_matrix(self, labels: list[str], matrix: np.ndarray) -> None:
        self.labels, self.matrix = list(labels), np.asarray(matrix)
        if self.selected is not None and not (
            self.selected[0] < len(labels) and self.selected[1] < len(labels)
        ):
            self.selected = None
        self.update()

    def set_selected(self, cell: tuple[int, int] | None) -> None:
        if cell != self.selected:
            self.selected = cell
            self.update()

    # -- geometry -------------------------------------------------------------------------------------
    def _metrics(self) -> QFontMetricsF:
        return QFontMetricsF(self.font())

    def _label_width(self) -> float:
        m = self._metrics()
        return max((m.horizontalAdvance(label) for label in self.labels), default=0.0)

    def _grid(self) -> QRectF:
        """The cells' area: square cells, as large as the widget allows."""
        m = self._metrics()
        line = m.height()
        label = self._label_width()
        left = label + GAP + line + 4  # row labels and the "labelled" title
        top = 2 * line + 4 + GAP  # the "predicted" title and the column labels (elided to a cell)
        side = max(min(self.width() - left - 4, self.height() - top - 4), 0.0)
        return QRectF(left, top, side, side)

    def cell_rect(self, row: int, column: int) -> QRectF:
        grid = self._grid()
        size = grid.width() / max(len(self.labels), 1)
        return QRectF(grid.left() + column * size, grid.top() + row * size, size, size)

    def cell_at(self, pos: QPointF) -> tuple[int, int] | None:
        n = len(self.labels)
        grid = self._grid()
        if not n or not grid.contains(pos):
            return None
        size = grid.width() / n
        row, column = int((pos.y() - grid.top()) // size), int((pos.x() - grid.left()) // size)
        return (row, column) if row < n and column < n else None

    # -- painting -------------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text, _metrics = self.begin_paint()
        n = len(self.labels)
        if not n:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No evaluation yet")
            painter.end()
            return
        m = self._metrics()
        line = m.height()
        grid = self._grid()
        size = grid.width() / n
        painter.setPen(text)
        painter.drawText(
            QRectF(grid.left(), 0, self.width() - grid.left(), line),
            Qt.AlignmentFlag.AlignLeft,
            "predicted →",
        )
        upright_title(painter, 2, grid.top(), grid.height(), line, "← labelled")
        totals = self.matrix.sum(axis=1)
        small = size < MIN_CELL * 1.6
        for i in range(n):
            label_rect = QRectF(line + 4, grid.top() + i * size, self._label_width(), size)
            painter.setPen(text)
            painter.drawText(
                label_rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, self.labels[i]
            )
            for j in range(n):
                cell = QRectF(grid.left() + j * size, grid.top() + i * size, size, size)
                count = int(self.matrix[i, j])
                share = count / totals[i] if totals[i] else 0.0
                painter.fillRect(cell, shade(share))
                painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Base), 1))
                painter.drawRect(cell)
                if not small:
                    painter.setPen(QColor(255, 255, 255) if share > 0.5 else QColor(30, 30, 30))
                    shown = "\u2013" if i == j == n - 1 else str(count)
                    painter.drawText(cell, Qt.AlignmentFlag.AlignCenter, shown)
        for j in range(n):
            painter.setPen(text)
            shown = m.elidedText(self.labels[j], Qt.TextElideMode.ElideRight, size - 2)
            painter.drawText(
                QRectF(grid.left() + j * size, grid.top() - GAP - line, size, line),
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom,
                shown,
            )
        if self.selected is not None:
            painter.setPen(QPen(SELECTED, 3))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(self.cell_rect(*self.selected).adjusted(1.5, 1.5, -1.5, -1.5))
        painter.end()

    # -- mouse ------------------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position())
        if cell is None or event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        if cell == self.selected:
            self.set_selected(None)
            self.cell_clicked.emit(-1, -1)
        else:
            self.set_selected(cell)
            self.cell_clicked.emit(*cell)

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QHelpEvent):
            cell = self.cell_at(QPointF(event.pos()))
            if cell is None:
                QToolTip.hideText()
            else:
                row, column = cell
                count = int(self.matrix[row, column])
                QToolTip.showText(
                    event.globalPos(),
                    f"{cell_explained(self.labels, row, column)}: {count}\n(click: only these images)",
                    self,
                )
            return True
        return super().event(event)
