"""ErrorBanner: the latest error where the user looks, owned by the context it came from
(the connection, a batch, the live stream): when that context changes (reconnected, a new
batch, a new stream) its error is cleared, so the banner never contradicts the window.

A message leads with what happened and what to do; raw detail (the server's or gRPC's own
text, in parentheses at the end) is behind a "Details" button."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from app.inference.redaction import redact

MIN_DETAIL_CHARS = 12  # "(frame 3)" is part of the message, not raw detail


class Context(enum.StrEnum):
    CONNECTION = "connection"
    BATCH = "batch"
    LIVE = "live"
    COMPARE = "compare"  # the A/B compare window's: cleared when it closes or runs anew
    OTHER = "other"  # exports, screenshots: cleared by dismissing


def split_detail(message: str) -> tuple[str, str]:
    """("lead", "detail") when the message ends with a parenthesised raw detail, else (message, "")."""
    text = message.rstrip()
    if not text.endswith(")"):
        return message, ""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                lead, detail = text[:i].rstrip(), text[i + 1 : -1].strip()
                if not lead or len(detail) < MIN_DETAIL_CHARS:
                    return message, ""
                return lead, detail
    return message, ""


@dataclass
class _Entry:
    text: str
    count: int
    order: int


class ErrorBanner(QWidget):
    """Hidden until `show_error(text, context)`; `clear(context)` removes that context's error;
    the close button dismisses everything."""

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
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.hide()
        self.count_label = QLabel()
        self.details_button = QToolButton()
        self.details_button.setText("Details ▸")
        self.details_button.setCheckable(True)
        self.details_button.setToolTip("Show the server's or the network's own words")
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.message, 1)
        row.addWidget(self.count_label)
        row.addWidget(self.details_button)
        row.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.detail)
        self._entries: dict[Context, _Entry] = {}
        self._order = 0
        self._shown: Context | None = None
        self.close_button.clicked.connect(self.dismiss)
        self.details_button.toggled.connect(self._toggle_details)
        self.hide()

    def show_error(self, text: str, context: Context = Context.OTHER) -> None:
        text = redact(text)  # a server's or an exception's words: no header value, no password
        self._order += 1
        entry = self._entries.get(context)
        count = entry.count + 1 if entry is not None else 1
        self._entries[context] = _Entry(text, count, self._order)
        self._render()

    def update_error(self, text: str, context: Context) -> None:
        """The same error as it stands now (an outage's duration, its newest answer): its text
        replaced, not counted again; shown as new when that context had none."""
        entry = self._entries.get(context)
        if entry is None:
            self.show_error(text, context)
            return
        entry.text = text
        self._render()

    def clear(self, context: Context) -> None:
        """That context changed (reconnected, a new batch, a new stream): its error is history."""
        if self._entries.pop(context, None) is not None:
            self._render()

    def context(self) -> Context | None:
        """Whose error is shown (None: hidden)."""
        return self._shown

    def count(self) -> int:
        entry = self._entries.get(self._shown) if self._shown is not None else None
        return entry.count if entry is not None else 0

    def text(self) -> str:
        """The whole message shown (lead and detail)."""
        entry = self._entries.get(self._shown) if self._shown is not None else None
        return entry.text if entry is not None else ""

    def lead(self) -> str:
        return self.message.text()

    def dismiss(self) -> None:
        self._entries.clear()
        self._render()
        self.dismissed.emit()

    def _render(self) -> None:
        if not self._entries:
            self._shown = None
            self.message.clear()
            self.detail.clear()
            self.count_label.clear()
            self.hide()
            return
        context, entry = max(self._entries.items(), key=lambda kv: kv[1].order)
        self._shown = context
        lead, detail = split_detail(entry.text)
        self.message.setText(lead)
        self.message.setToolTip(entry.text)
        self.detail.setText(detail)
        self.details_button.setVisible(bool(detail))
        self.detail.setVisible(bool(detail) and self.details_button.isChecked())
        self.count_label.setText(f"\u00d7{entry.count}" if entry.count > 1 else "")
        self.count_label.setToolTip(f"{entry.count} errors of this kind since it was last cleared")
        self.show()

    def _toggle_details(self, on: bool) -> None:
        self.details_button.setText("Details ▾" if on else "Details ▸")
        self.detail.setVisible(on and bool(self.detail.text()))
