"""The annotation style's colours (app.drawing.style) as Qt colours, for widgets beside the view
(the tracks panel, the detections panel)."""

from __future__ import annotations

from PySide6.QtGui import QColor

from app.drawing.style import class_rgb, track_rgb


def class_color(class_id: int) -> QColor:
    return QColor(*class_rgb(class_id))


def track_color(track_id: int) -> QColor:
    """A track's colour, as its trail is drawn."""
    return QColor(*track_rgb(track_id))
