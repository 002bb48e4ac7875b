"""The class palette shared by the image view and the PNG export."""

from __future__ import annotations

from PySide6.QtGui import QColor

# 20 distinct colours (Tableau 20, darker/lighter interleaved so neighbouring
# class ids differ strongly); a class id always maps to the same colour.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
)


def class_rgb(class_id: int) -> tuple[int, int, int]:
    """The palette colour of a class id (negative ids wrap too)."""
    return PALETTE[class_id % len(PALETTE)]


def class_color(class_id: int) -> QColor:
    r, g, b = class_rgb(class_id)
    return QColor(r, g, b)


def text_color_on(background: QColor) -> QColor:
    """Black or white, whichever reads better on `background` (perceived luminance)."""
    lum = 0.299 * background.red() + 0.587 * background.green() + 0.114 * background.blue()
    return QColor(0, 0, 0) if lum > 150 else QColor(255, 255, 255)


def detection_label(label: str, score: float) -> str:
    """The text drawn next to a box, e.g. "face 0.93"."""
    return f"{label} {score:.2f}"
