"""A panel's content that scrolls instead of forcing its window larger than the screen."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

# Lines of text a scrolled panel keeps at least: eight docks stacked in one column (title bars
# included) still fit the height a 1024x640 screen leaves under the menus and toolbar.
MIN_LINES = 2.5


def scrolling(widget: QWidget) -> QScrollArea:
    """`widget` in a frameless scroll area: a dock (or window) holding it can shrink to a few
    lines whatever the docks stacked beside it, so the window still fits 1024x640."""
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    # Never cut silently: narrower than its content, it scrolls sideways too.
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    area.setMinimumHeight(round(MIN_LINES * area.fontMetrics().height()))
    return area
