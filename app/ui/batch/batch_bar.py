"""BatchBar: previous / next, where you are in the batch (n / N · file · k detections ·
latency), a search box over the names and a filter by class or outcome."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QToolButton, QWidget

ALL, WITH_DETECTIONS, WITHOUT_DETECTIONS, FAILED = "all", "with", "without", "failed"
CLASS_PREFIX = "class:"
FIXED_FILTERS = (
    (ALL, "All images"),
    (WITH_DETECTIONS, "With detections"),
    (WITHOUT_DETECTIONS, "Without detections"),
    (FAILED, "Failed"),
)


class BatchBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.prev_button = QToolButton()
        self.prev_button.setText("◀")
        self.next_button = QToolButton()
        self.next_button.setText("▶")
        self.info = QLabel("")
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search names…")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Show only the images whose name (path in the opened folder) contains this")
        self.search.setMaximumWidth(220)
        self.filter = QComboBox()
        self.filter.setToolTip("Show only the images with detections of a class, without any, or failed")
        self.filter.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for value, text in FIXED_FILTERS:
            self.filter.addItem(text, value)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.addWidget(self.prev_button)
        layout.addWidget(self.next_button)
        layout.addWidget(self.info, 1)
        layout.addWidget(self.search)
        layout.addWidget(self.filter)

    def filter_value(self) -> str:
        return str(self.filter.currentData())

    def add_class(self, label: str) -> None:
        value = CLASS_PREFIX + label
        if self.filter.findData(value) < 0:
            self.filter.addItem(f"Class: {label}", value)

    def reset_classes(self) -> None:
        self.filter.setCurrentIndex(0)
        while self.filter.count() > len(FIXED_FILTERS):
            self.filter.removeItem(self.filter.count() - 1)
