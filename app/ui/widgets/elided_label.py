"""ElidedLabel: one line of plain text that, when narrower than its text, drops whole words
and ends with "…" (never cut mid-word, never clipped silently). `text()` stays the whole
text; `shown_text()` is what is painted."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

ELLIPSIS = "…"
TRAILING = " :,;·-"  # not left dangling before the ellipsis


def elide_words(text: str, metrics: QFontMetrics, width: int) -> str:
    """`text` when it fits in `width` pixels, else as many leading words as fit, then "…"."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    words = text.split(" ")
    while len(words) > 1:
        words.pop()
        candidate = " ".join(words).rstrip(TRAILING) + ELLIPSIS
        if metrics.horizontalAdvance(candidate) <= width:
            return candidate
    # One word longer than the room: cut it, still with the ellipsis.
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    def shown_text(self) -> str:
        room = self.contentsRect().width() - 2 * self.margin()
        return elide_words(self.text(), self.fontMetrics(), max(room, 0))

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self.text()) + 8, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("M" * 6), super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        rect = self.contentsRect().adjusted(self.margin(), self.margin(), -self.margin(), -self.margin())
        align = int(self.alignment() | Qt.AlignmentFlag.AlignVCenter)
        text, role = self.shown_text(), self.foregroundRole()
        self.style().drawItemText(painter, rect, align, self.palette(), self.isEnabled(), text, role)
        painter.end()
