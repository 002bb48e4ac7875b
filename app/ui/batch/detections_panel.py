"""DetectionsPanel: the boxes drawn on the shown picture as a list (class, score, box);
selecting one highlights its box in the view (thicker, the others dimmed) and brings it
into sight when zoomed in."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.ui.view.detection_items import BOX_PEN_WIDTH, DetectionItem
from app.ui.view.image_view import ImageView

COLUMNS = ("#", "Class", "Score", "Box x1, y1, x2, y2")
POLL_MS = 250  # follows the view's boxes (live: at most 4 list updates a second)
HIGHLIGHT_PEN_WIDTH = 4.0
DIMMED_OPACITY = 0.35


class DetectionsPanel(QWidget):
    def __init__(self, view: ImageView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.empty = QLabel("No boxes on the picture shown")
        self.empty.setStyleSheet("color: palette(mid);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty)
        self._items: list[DetectionItem] = []
        self._highlighted: int | None = None
        self.table.itemSelectionChanged.connect(self._on_selection)
        # Polling instead of a signal from the view: a cheap identity check 4 times a second
        # keeps the view free of list concerns.
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self.refresh)
        self._poll.start()

    def refresh(self) -> None:
        """Show the boxes the view draws now (no-op when they have not changed)."""
        items = self.view.box_items()
        if len(items) == len(self._items) and all(a is b for a, b in zip(items, self._items, strict=True)):
            return
        selected = self._highlighted
        self._items = items
        self._highlighted = None
        self.table.blockSignals(True)
        self.table.setRowCount(len(items))
        for row, item in enumerate(items):
            det = item.detection
            x1, y1, x2, y2 = det.box
            cells = (str(row + 1), det.label, f"{det.score:.3f}", f"{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}")
            for col, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                if col in (0, 2):
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, cell)
        self.table.clearSelection()
        self.table.blockSignals(False)
        self.empty.setVisible(not items)
        if selected is not None and selected < len(items):
            self.select(selected)  # the same position on the next live frame stays highlighted

    def select(self, row: int | None) -> None:
        if row is None:
            self.table.clearSelection()
        else:
            self.table.selectRow(row)

    def highlighted(self) -> int | None:
        return self._highlighted

    def _on_selection(self) -> None:
        rows = {index.row() for index in self.table.selectionModel().selectedRows()}
        row = min(rows) if rows else None
        self._highlighted = row
        for i, item in enumerate(self._items):
            pen = QPen(item.pen())
            pen.setWidthF(HIGHLIGHT_PEN_WIDTH if i == row else BOX_PEN_WIDTH)
            item.setPen(pen)
            item.setOpacity(1.0 if row is None or i == row else DIMMED_OPACITY)
            item.setZValue(2 if i == row else 1)
        if row is not None and row < len(self._items) and not self.view.is_fit_mode():
            self.view.ensureVisible(self._items[row], 40, 40)
