"""ElidedLabel: one line of text that, when narrower than its text, drops whole words and
ends with "…" (never cut mid-word, never clipped silently); the whole text in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent
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
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        self._elide()

    def full_text(self) -> str:
        return self._full

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(self.fontMetrics().horizontalAdvance(self._full) + 8, hint.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("M" * 6), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = self.contentsRect().width() - 2 * self.margin() - 4
        super().setText(elide_words(self._full, self.fontMetrics(), max(room, 0)))
