"""The top-k classes of the shown image (classification models): label and score per row.
Hidden when the model gives no classes."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from app.inference.result import ClassScore


class ClassesPanel(QGroupBox):
    def __init__(self) -> None:
        super().__init__("Top classes")
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["class", "score"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.table)
        self.setVisible(False)

    def set_classes(self, classes: Sequence[ClassScore]) -> None:
        self.table.setRowCount(len(classes))
        for row, c in enumerate(classes):
            name = QTableWidgetItem(c.label)
            name.setToolTip(f"class {c.class_id}")
            score = QTableWidgetItem(f"{c.score:.3f}")
            score.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, score)
        self.setVisible(bool(classes))

    def rows(self) -> list[tuple[str, str]]:
        """(label, score text) of each row, top first (for tests)."""
        out = []
        for row in range(self.table.rowCount()):
            name, score = self.table.item(row, 0), self.table.item(row, 1)
            out.append((name.text() if name else "", score.text() if score else ""))
        return out
