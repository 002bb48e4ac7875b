"""ElidedLabel: one line of plain text that, when narrower than its text, drops whole words
and ends with "…" (never cut mid-word, never clipped silently). `text()` stays the whole
text; `shown_text()` is what is painted."""

from __future__ import annotations

import html

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPaintEvent, QResizeEvent
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


class ElidedTailLabel(QLabel):
    """One line: a bold, coloured head ("Connected · ") then plain text that drops whole words
    and ends with "…" when the line is too narrow; it never wraps, so a long message never
    makes the rows under it move. `full_text()` is the whole line (rich text)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._head_html = self._head_plain = self._tail = ""

    def set_parts(self, head_html: str, head_plain: str, tail: str) -> None:
        """`head_html` shown whole (its plain text `head_plain`, measured in bold), then `tail`."""
        self._head_html, self._head_plain, self._tail = head_html, head_plain, tail
        self._refit()

    def full_text(self) -> str:
        return self._head_html + html.escape(self._tail)

    def shown_tail(self) -> str:
        bold = QFont(self.font())
        bold.setBold(True)
        room = self.contentsRect().width() - QFontMetrics(bold).horizontalAdvance(self._head_plain) - 4
        return elide_words(self._tail, self.fontMetrics(), max(room, 0))

    def _refit(self) -> None:
        super().setText(self._head_html + html.escape(self.shown_tail()))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._refit()

    def sizeHint(self) -> QSize:
        width = self.fontMetrics().horizontalAdvance(self._head_plain + self._tail) + 8
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("M" * 6), super().minimumSizeHint().height())
