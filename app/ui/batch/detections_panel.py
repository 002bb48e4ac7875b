"""DetectionsPanel: what is drawn on the shown picture as a list: the boxes (class, score, box, a
mask's area) and a semantic model's class masks (class, their box, area and share of the
picture); selecting a row highlights it in the view (a box thicker, a mask more opaque, the
others dimmed) and brings it into sight when zoomed in."""

from __future__ import annotations

from collections.abc import Sequence

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
from superqt.utils import signals_blocked

from app.inference.result import SemanticMask
from app.ui.batch.result_summary import share_text
from app.ui.view.detection_items import BOX_PEN_WIDTH, DetectionItem
from app.ui.view.image_view import ImageView
from app.ui.view.overlay_items import MaskItem

COLUMNS = ("#", "Class", "Score", "Box x1, y1, x2, y2", "Area px")
POLL_MS = 250  # follows the view's boxes (live: at most 4 list updates a second)
HIGHLIGHT_PEN_WIDTH = 4.0
HIGHLIGHT_MASK_OPACITY = 0.8
DIMMED_OPACITY = 0.35


def _same(a: Sequence[object], b: Sequence[object]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _box(box: Sequence[float]) -> str:
    x1, y1, x2, y2 = box
    return f"{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}"


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
        self.empty = QLabel("Nothing found on the picture shown")
        self.empty.setStyleSheet("color: palette(mid);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty)
        self._items: list[DetectionItem] = []
        self._masks: list[tuple[SemanticMask, MaskItem]] = []  # rows after the boxes
        self._highlighted: int | None = None
        self.table.itemSelectionChanged.connect(self._on_selection)
        # Polling instead of a signal from the view: a cheap identity check 4 times a second
        # keeps the view free of list concerns.
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self.refresh)
        self._poll.start()

    def refresh(self) -> None:
        """Show what the view draws now (no-op when it has not changed)."""
        items, masks = self.view.box_items(), self.view.semantic_items()
        if _same(items, self._items) and _same([m for _, m in masks], [m for _, m in self._masks]):
            return
        selected = self._highlighted
        self._items, self._masks = items, masks
        self._highlighted = None
        with signals_blocked(self.table):
            self.table.setRowCount(len(items) + len(masks))
            rows: list[tuple[str, ...]] = []
            for item in items:
                det = item.detection
                area = "" if det.mask is None else str(det.mask.area)
                rows.append((det.label, f"{det.score:.3f}", _box(det.box), area))
            size = self.view.image_size()
            for semantic, _item in masks:
                x1, y1, x2, y2 = semantic.mask.bbox()
                share = share_text(semantic, *size) if size else f"{semantic.label}"
                area = f"{semantic.area} ({share.removeprefix(semantic.label).strip()})"
                rows.append((semantic.label, "-", _box((x1, y1, x2, y2)), area))
            for row, cells in enumerate(rows):
                for col, text in enumerate((str(row + 1), *cells)):
                    cell = QTableWidgetItem(text)
                    if col in (0, 2, 4):
                        cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    self.table.setItem(row, col, cell)
            self.table.clearSelection()
        self.empty.setVisible(not rows)
        if selected is not None and selected < len(rows):
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
        opacity = self.view.mask_opacity()
        for i, (_semantic, mask_item) in enumerate(self._masks, start=len(self._items)):
            chosen = row is None or i == row
            shown = max(opacity, HIGHLIGHT_MASK_OPACITY) if i == row else opacity
            mask_item.setOpacity(shown if chosen else opacity * DIMMED_OPACITY)
        if row is not None and not self.view.is_fit_mode():
            target = self._items[row] if row < len(self._items) else self._masks[row - len(self._items)][1]
            self.view.ensureVisible(target, 40, 40)
