"""The annotation style: colours, line widths, label boxes and fonts, mask opacity, keypoints and
their skeleton, the top-k corner and track trails. Qt-free, one for every picture: the view, the
PNG export and the recorded video.

Sizes are in screen pixels: the view draws them at that size whatever its zoom; a picture saved
at its own size (PNG, video) multiplies them by `picture_scale`, so a label stays legible on a
large photo and a 640x480 frame is drawn exactly as the view shows it at 1:1.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass

from app.inference.decoding.keypoints import VISIBLE_SCORE

RGB = tuple[int, int, int]
RGBA = tuple[int, int, int, int]
Point = tuple[float, float]

# 20 distinct colours (Tableau 20, darker/lighter interleaved so neighbouring
# class ids differ strongly); a class id always maps to the same colour.
PALETTE: tuple[RGB, ...] = (
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

# Up to this short side a picture is drawn at the view's 1:1 sizes; beyond, they grow with it.
PICTURE_SHORT_SIDE = 480


def class_rgb(class_id: int) -> RGB:
    """The palette colour of a class id (negative ids wrap too)."""
    return PALETTE[class_id % len(PALETTE)]


def track_rgb(track_id: int) -> RGB:
    """A track's colour: vivid hues a golden angle apart, so ids 1, 2, 3 differ strongly."""
    r, g, b = colorsys.hsv_to_rgb((0.13 + track_id * 0.618034) % 1.0, 0.9, 1.0)
    return round(r * 255), round(g * 255), round(b * 255)


def text_rgb_on(background: RGB) -> RGB:
    """Black or white, whichever reads better on `background` (perceived luminance)."""
    r, g, b = background
    return (0, 0, 0) if 0.299 * r + 0.587 * g + 0.114 * b > 150 else (255, 255, 255)


def detection_label(label: str, score: float) -> str:
    """The text drawn next to a box, e.g. "face 0.93"."""
    return f"{label} {score:.2f}"


def classes_line(label: str, score: float) -> str:
    """One line of the top-k corner, e.g. "cat  0.90"."""
    return f"{label}  {score:.2f}"


def picture_scale(width: int, height: int) -> float:
    """What a picture saved at its own size multiplies the style's sizes by."""
    return max(1.0, min(width, height) / PICTURE_SHORT_SIDE)


@dataclass(frozen=True)
class FontStyle:
    pixel_size: int = 12  # the view's labels: 9 pt at 96 dpi
    bold: bool = True


@dataclass(frozen=True)
class AnnotationStyle:
    """How every picture of a result is drawn. The viewer changes mask_opacity (its slider) and
    the keypoint fields (the model's profile); the rest are the house style."""

    # Boxes and their "label score" tags (above the box, inside it when the picture has no room).
    box_width: float = 2.0  # drawn inside the box, on whole device pixels
    label_font: FontStyle = FontStyle()
    label_padding: float = 3.0
    # Instance and semantic masks: the class colour at this opacity.
    mask_opacity: float = 0.5
    # Keypoints: dots joined by the skeleton's edges (0-based pairs). Points scoring below
    # visible_score are hidden, and so are the edges touching them. keypoint_dots=False draws
    # the edges only (contour-style models: face meshes, BlazePose).
    skeleton: tuple[tuple[int, int], ...] = ()
    keypoint_names: tuple[str, ...] = ()
    keypoint_dots: bool = True
    visible_score: float = VISIBLE_SCORE
    keypoint_radius: float = 3.5
    keypoint_outline: RGB = (255, 255, 255)
    keypoint_outline_width: float = 1.0
    skeleton_width: float = 2.0
    # A classifier's top-k: a table in the picture's top-left corner.
    classes_font: FontStyle = FontStyle()
    classes_padding: float = 3.0
    classes_background: RGBA = (0, 0, 0, 170)
    classes_foreground: RGB = (255, 255, 255)
    # Track trails: recent box centres joined in the track's colour, a dot and "#id" at the head.
    trail_width: float = 2.5
    trail_head_radius: float = 3.0
    trail_font: FontStyle = FontStyle(pixel_size=11)
    trail_text_offset: Point = (5.0, -5.0)
    palette: tuple[RGB, ...] = PALETTE

    def class_rgb(self, class_id: int) -> RGB:
        return self.palette[class_id % len(self.palette)]
