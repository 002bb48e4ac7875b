"""The QPainter backend of the one annotation renderer: paints the draw list's primitives
(app/drawing/draw_list.py). The view's items call it for their own shape, the PNG export and the
recorded video for a whole picture, so all three draw alike.

Every function takes `to_device`, the map from image pixels to the painter's device pixels (the
view's zoom and pan, or the identity for a picture), and `scale`, what the style's screen-pixel
sizes are multiplied by. Geometry is mapped first and the sizes applied in device pixels: that is
what keeps the view's lines and labels at a constant size on screen. Render hints are set here
for each primitive, so whoever calls (the view, which anti-aliases, or a bare QImage painter)
gets the same pixels.

Painting onto a QImage is allowed off the GUI thread (Qt's "Painting in threads"): the
recorder's thread calls `render_rgb`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPen, QPolygonF, QTransform

from app.drawing.draw_list import Dots, DrawList, Fill, Outline, Placement, Polyline, Primitive, Text
from app.drawing.style import FontStyle, picture_scale
from app.inference.masks import BinaryMask

AA = QPainter.RenderHint.Antialiasing
TEXT_AA = QPainter.RenderHint.TextAntialiasing
SMOOTH = QPainter.RenderHint.SmoothPixmapTransform


def qcolor(rgb: tuple[int, ...]) -> QColor:
    return QColor(*rgb)


def qfont(font: FontStyle, scale: float = 1.0) -> QFont:
    f = QFont()
    f.setPixelSize(max(1, round(font.pixel_size * scale)))
    f.setBold(font.bold)
    return f


# -- masks -------------------------------------------------------------------------------------


def mask_image(mask: BinaryMask, color: tuple[int, int, int]) -> tuple[QImage, np.ndarray]:
    """The mask's crop as an Indexed8 image whose colour table paints the 1s in `color` and leaves
    the 0s transparent. QImage does not copy: keep the returned bytes as long as the image."""
    data = np.ascontiguousarray(mask.crop(), dtype=np.uint8)
    h, w = data.shape
    image = QImage(data.data, w, h, data.strides[0] if h else w, QImage.Format.Format_Indexed8)
    image.setColorTable([QColor(0, 0, 0, 0).rgba(), qcolor(color).rgba()])
    return image, data


def paint_fill(
    painter: QPainter, fill: Fill, to_device: QTransform, opacity: float, image: QImage | None = None
) -> None:
    """The mask at `opacity` (times the painter's own), one mask pixel per image pixel, hard edges
    at any zoom. `image`: a prepared `mask_image` (the view's item keeps its own)."""
    keep = None
    if image is None:
        image, keep = mask_image(fill.mask, fill.color)
    if image.isNull():
        return
    painter.save()
    painter.setWorldTransform(to_device)
    painter.setRenderHint(SMOOTH, False)
    painter.setOpacity(painter.opacity() * opacity)
    painter.drawImage(QPointF(fill.mask.left, fill.mask.top), image)
    painter.restore()
    del keep


# -- boxes -------------------------------------------------------------------------------------


def device_box(to_device: QTransform, box: tuple[float, float, float, float]) -> QRect:
    """A box in device pixels, its edges on whole pixels (x2/y2 exclusive, as in image pixels)."""
    x1, y1, x2, y2 = box
    a, b = to_device.map(QPointF(x1, y1)), to_device.map(QPointF(x2, y2))
    left, top = round(min(a.x(), b.x())), round(min(a.y(), b.y()))
    right, bottom = round(max(a.x(), b.x())), round(max(a.y(), b.y()))
    return QRect(left, top, right - left, bottom - top)


def paint_outline(painter: QPainter, rect: QRect, color: QColor, width: float, dashed: bool = False) -> None:
    """`rect`'s outline in device pixels, `width` wide inside it (a box thinner than two widths is
    filled). Call with the world transform reset."""
    w = max(1, round(width))
    if rect.width() <= 0 or rect.height() <= 0:
        return
    painter.save()
    painter.setRenderHint(AA, False)
    if rect.width() <= 2 * w or rect.height() <= 2 * w:
        painter.fillRect(rect, color)
    else:
        pen = QPen(color, w)
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        pen.setStyle(Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        half = w / 2
        painter.drawRect(QRectF(rect.x() + half, rect.y() + half, rect.width() - w, rect.height() - w))
    painter.restore()


# -- lines and dots ------------------------------------------------------------------------------


def paint_polyline(painter: QPainter, line: Polyline, to_device: QTransform, scale: float) -> None:
    painter.save()
    painter.resetTransform()
    painter.setRenderHint(AA, True)
    painter.setPen(QPen(qcolor(line.color), line.width * scale))
    painter.drawPolyline(QPolygonF([to_device.map(QPointF(x, y)) for x, y in line.points]))
    painter.restore()


def paint_dots(painter: QPainter, dots: Dots, to_device: QTransform, scale: float) -> None:
    painter.save()
    painter.resetTransform()
    painter.setRenderHint(AA, True)
    painter.setPen(QPen(qcolor(dots.outline), dots.outline_width * scale))
    painter.setBrush(qcolor(dots.fill))
    radius = dots.radius * scale
    for x, y in dots.points:
        painter.drawEllipse(to_device.map(QPointF(x, y)), radius, radius)
    painter.restore()


# -- text --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextLayout:
    """A Text's box in device pixels, whole pixels, relative to its top-left corner."""

    font: QFont
    width: int
    height: int
    line_height: int
    ascent: int
    padding: int


def text_layout(text: Text, scale: float = 1.0) -> TextLayout:
    font = qfont(text.font, scale)
    metrics = QFontMetricsF(font)
    pad = round(text.padding * scale)
    line_height = math.ceil(metrics.height())
    width = math.ceil(max(metrics.horizontalAdvance(line) for line in text.lines)) + 2 * pad
    return TextLayout(
        font, width, line_height * len(text.lines) + 2 * pad, line_height, round(metrics.ascent()), pad
    )


def text_origin(
    text: Text, layout: TextLayout, anchor: QPointF, bounds: QRect | None, scale: float
) -> QPointF:
    """Where the text's box starts (its top-left corner, or the first baseline for BESIDE), in
    device pixels, given the anchor and the picture's rect there."""
    x, y = round(anchor.x()), round(anchor.y())
    if text.placement is Placement.BESIDE:
        return QPointF(x + round(text.offset[0] * scale), y + round(text.offset[1] * scale))
    if text.placement is Placement.CORNER:
        return QPointF(x, y)
    if bounds is None:  # no picture to stay within: above
        return QPointF(x, y - layout.height)
    top = y - layout.height if y - layout.height >= bounds.top() else y
    right = bounds.x() + bounds.width()
    left = min(max(x, bounds.x()), max(right - layout.width, bounds.x()))
    return QPointF(left, top)


def paint_text(
    painter: QPainter,
    text: Text,
    anchor: QPointF,
    bounds: QRect | None,
    scale: float,
    layout: TextLayout | None = None,
) -> None:
    """`text` at `anchor` (device pixels; `bounds`: the picture's rect there, for ABOVE)."""
    layout = layout or text_layout(text, scale)
    origin = text_origin(text, layout, anchor, bounds, scale)
    painter.save()
    painter.resetTransform()
    painter.setRenderHint(AA, False)
    painter.setRenderHint(TEXT_AA, True)
    painter.setFont(layout.font)
    if text.placement is Placement.BESIDE:
        painter.setPen(qcolor(text.color))
        for i, line in enumerate(text.lines):
            painter.drawText(QPointF(origin.x(), origin.y() + i * layout.line_height), line)
    else:
        left, top = int(origin.x()), int(origin.y())
        if text.background is not None:
            painter.fillRect(QRect(left, top, layout.width, layout.height), qcolor(text.background))
        painter.setPen(qcolor(text.color))
        for i, line in enumerate(text.lines):
            baseline = top + layout.padding + i * layout.line_height + layout.ascent
            painter.drawText(QPointF(left + layout.padding, baseline), line)
    painter.restore()


# -- a whole picture -----------------------------------------------------------------------------


def paint_primitive(
    painter: QPainter, primitive: Primitive, to_device: QTransform, scale: float, bounds: QRect
) -> None:
    if isinstance(primitive, Fill):
        paint_fill(painter, primitive, to_device, primitive.opacity)
    elif isinstance(primitive, Outline):
        painter.save()
        painter.resetTransform()
        rect = device_box(to_device, primitive.box)
        paint_outline(painter, rect, qcolor(primitive.color), primitive.width * scale)
        painter.restore()
    elif isinstance(primitive, Polyline):
        paint_polyline(painter, primitive, to_device, scale)
    elif isinstance(primitive, Dots):
        paint_dots(painter, primitive, to_device, scale)
    else:
        paint_text(painter, primitive, to_device.map(QPointF(*primitive.anchor)), bounds, scale)


def paint_draw_list(painter: QPainter, drawing: DrawList, to_device: QTransform, scale: float) -> None:
    w, h = drawing.size
    bounds = device_box(to_device, (0.0, 0.0, float(w), float(h)))
    for primitive in drawing.primitives():
        paint_primitive(painter, primitive, to_device, scale, bounds)


def render_rgb(
    image: np.ndarray, drawing: DrawList, scale: float | None = None, in_place: bool = False
) -> np.ndarray:
    """`image` (H, W, 3 RGB uint8) with `drawing` painted in, at the picture's own size (`scale`
    default: `picture_scale`). `in_place`: paint into `image` itself (the recorder's own copy)."""
    out = image if in_place and image.flags.c_contiguous else np.array(image, dtype=np.uint8, order="C")
    h, w = out.shape[:2]
    target = QImage(out.data, w, h, out.strides[0], QImage.Format.Format_RGB888)
    painter = QPainter(target)
    try:
        paint_draw_list(painter, drawing, QTransform(), picture_scale(w, h) if scale is None else scale)
    finally:
        painter.end()
    return out


def render_rgb_in_place(image: np.ndarray, drawing: DrawList) -> np.ndarray:
    """The recorder's painter (app.pipeline.recording.PaintFrame): into its own copy of the frame,
    on its own thread."""
    return render_rgb(image, drawing, in_place=True)
