"""ErrorBanner: the latest error, prominently, with a count when several arrived; dismissable."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget


class ErrorBanner(QWidget):
    """Hidden until `show_error(text)`; the close button hides it and resets the count."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ErrorBanner")
        # Needed for a stylesheet background on a plain QWidget subclass.
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(
            "#ErrorBanner { background: #c62828; border-radius: 3px; }"
            "#ErrorBanner QLabel { color: white; }"
            "#ErrorBanner QToolButton { color: white; border: none; font-weight: bold; }"
        )
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        font = self.message.font()
        font.setBold(True)
        self.message.setFont(font)
        self.count_label = QLabel()
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.count_label)
        layout.addWidget(self.close_button)
        self._count = 0
        self.close_button.clicked.connect(self.dismiss)
        self.hide()

    def show_error(self, text: str) -> None:
        self._count += 1
        self.message.setText(text)
        self.message.setToolTip(text)
        self.count_label.setText(f"\u00d7{self._count}" if self._count > 1 else "")
        self.count_label.setToolTip(f"{self._count} errors since the banner was last dismissed")
        self.show()

    def count(self) -> int:
        return self._count

    def text(self) -> str:
        return self.message.text()

    def dismiss(self) -> None:
        self._count = 0
        self.message.clear()
        self.count_label.clear()
        self.hide()
        self.dismissed.emit()
