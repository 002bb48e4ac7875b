"""The compare panel: per-model latency p50/p95, throughput and detections per image, the
agreement (matched / union), and every compared input with its disagreement, sortable;
a click opens that input in the compare view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.pipeline.compare import Disagreement, Side
from app.ui.analysis.stats_panel import NONE_TEXT, format_ms
from app.ui.compare.compare_view import SIDE_COLORS

ROWS = ("model", "p50", "p95", "throughput", "detections / image", "ok / failed", "dropped (live)")
ACCURACY_ROWS = ("mAP (dataset)", "mAP50 (dataset)")
COLUMNS = ("input", "frame", "only A", "only B", "matched", "agreement")
COL_ONLY_A, COL_ONLY_B, COL_AGREEMENT = 2, 3, 5


class _Sortable(QTableWidgetItem):
    """Sorts by the number in UserRole when there is one."""

    def __init__(self, text: str, value: float | None = None) -> None:
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole, value)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            return mine < theirs
        return self.text() < other.text()  # (not super(): PySide would call this again)


class ComparePanel(QWidget):
    open_requested = Signal(object, object)  # source, frame (None for images)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout()
        self.cells: dict[tuple[str, Side], QLabel] = {}
        for side, column in ((Side.A, 1), (Side.B, 2)):
            head = QLabel(side.upper())
            head.setStyleSheet(f"color: {SIDE_COLORS[side].name()}; font-weight: bold")
            grid.addWidget(head, 0, column)
        for r, name in enumerate(ROWS, start=1):
            grid.addWidget(QLabel(name), r, 0)
            for side, column in ((Side.A, 1), (Side.B, 2)):
                cell = QLabel(NONE_TEXT)
                cell.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                self.cells[(name, side)] = cell
                grid.addWidget(cell, r, column)
        # Each model's accuracy on the labelled dataset open in the viewer (Evaluate against
        # labels…), once the compare ran on its images; hidden without a dataset.
        self.accuracy_rows: list[QLabel] = []
        self.accuracy: dict[tuple[str, Side], QLabel] = {}
        for r, name in enumerate(ACCURACY_ROWS, start=len(ROWS) + 1):
            title = QLabel(name)
            self.accuracy_rows.append(title)
            grid.addWidget(title, r, 0)
            for side, column in ((Side.A, 1), (Side.B, 2)):
                cell = QLabel(NONE_TEXT)
                cell.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                cell.setStyleSheet("font-weight: bold")
                self.accuracy[(name, side)] = cell
                self.accuracy_rows.append(cell)
                grid.addWidget(cell, r, column)
        self.set_accuracy(None)
        self.agreement = QLabel("agreement")
        self.agreement.setStyleSheet("font-weight: bold")
        self.agreement.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSortingEnabled(True)
        self.table.cellClicked.connect(self._clicked)
        self.table.cellActivated.connect(self._clicked)
        hint = QLabel("Inputs, most disagreement first (click a header to sort, a row to open it)")
        hint.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(grid)
        layout.addWidget(self.agreement)
        layout.addWidget(hint)
        layout.addWidget(self.table, 1)
        self._keys: set[tuple[str | None, int | None]] = set()

    def set_figures(self, summary: dict[str, Any], dropped: dict[Side, str] | None = None) -> None:
        """`summary`: CompareTally.summary() (plus "model" per side)."""
        for side in Side:
            f = summary[side.value]
            values = {
                "model": str(f.get("model", NONE_TEXT)),
                "p50": format_ms(f.get("p50_ms")),
                "p95": format_ms(f.get("p95_ms")),
                "throughput": f"{f.get('throughput', 0.0):.1f}/s",
                "detections / image": f"{f.get('detections_per_image', 0.0):.2f}",
                "ok / failed": f"{f.get('ok', 0)} / {f.get('failed', 0)}",
                "dropped (live)": (dropped or {}).get(side, NONE_TEXT),
            }
            for name, text in values.items():
                self.cells[(name, side)].setText(text)
        self.agreement.setText(
            f"agreement {summary['agreement']:.3f} · {summary['matched']} matched, "
            f"{summary['only_a']} only in A, {summary['only_b']} only in B · {summary['total']} input(s)"
        )

    def set_accuracy(self, values: dict[Side, dict[str, str]] | None, note: str = "") -> None:
        """Each side's figures on the labelled dataset ({side: {row: text}}); None: no dataset
        open (the rows are hidden). `note`: e.g. on how many of the dataset's images."""
        for widget in self.accuracy_rows:
            widget.setVisible(values is not None)
            widget.setToolTip(note)
        for (name, side), cell in self.accuracy.items():
            cell.setText((values or {}).get(side, {}).get(name, NONE_TEXT))

    def add_row(self, row: Disagreement) -> None:
        key = (row.source, row.frame)
        if key in self._keys:
            return
        self._keys.add(key)
        self.table.setSortingEnabled(False)
        r = self.table.rowCount()
        self.table.insertRow(r)
        name = _Sortable(Path(row.source).name if row.source else "")
        name.setToolTip(row.source or "")
        name.setData(Qt.ItemDataRole.UserRole + 1, key)
        cells = [
            name,
            _Sortable("" if row.frame is None else str(row.frame), row.frame),
            _Sortable(str(row.only_a), row.only_a),
            _Sortable(str(row.only_b), row.only_b),
            _Sortable(str(row.matched), row.matched),
            _Sortable(f"{row.agreement:.2f}", row.agreement),
        ]
        for c, cell in enumerate(cells):
            self.table.setItem(r, c, cell)
        self.table.setSortingEnabled(True)

    def sort_by_disagreement(self) -> None:
        """Least agreement first (ties: most boxes only one model found)."""
        self.table.sortItems(COL_AGREEMENT, Qt.SortOrder.AscendingOrder)

    def clear_rows(self) -> None:
        self.table.setRowCount(0)
        self._keys.clear()

    def key_at(self, row: int) -> tuple[str | None, int | None]:
        item = self.table.item(row, 0)
        assert item is not None
        source, frame = item.data(Qt.ItemDataRole.UserRole + 1)
        return source, frame

    def _clicked(self, row: int, _column: int) -> None:
        source, frame = self.key_at(row)
        self.open_requested.emit(source, frame)
