"""The class palette (app.pipeline.annotate) as Qt colours, for the view and the PNG export."""

from __future__ import annotations

from PySide6.QtGui import QColor

from app.pipeline.annotate import class_rgb, detection_label

__all__ = ["class_color", "class_rgb", "detection_label", "text_color_on"]


def class_color(class_id: int) -> QColor:
    r, g, b = class_rgb(class_id)
    return QColor(r, g, b)


def text_color_on(background: QColor) -> QColor:
    """Black or white, whichever reads better on `background` (perceived luminance)."""
    lum = 0.299 * background.red() + 0.587 * background.green() + 0.114 * background.blue()
    return QColor(0, 0, 0) if lum > 150 else QColor(255, 255, 255)
