"""The QPainter backend of the one annotation renderer: paints the draw list's primitives
(app/drawing/draw_list.py). The view's items paint their own shape with it, the PNG export and
the recorded video a whole picture, so all three draw alike.

A `DevicePainter` is one pass in device pixels: `to_device` maps image pixels to the painter's
device (the view's zoom and pan, or the identity for a picture) and `scale` multiplies the
style's screen-pixel sizes (1 in the view, `picture_scale` for a picture). Geometry is mapped
first and the sizes applied in device pixels: that keeps the view's lines and labels at a
constant size on screen. Boxes and text boxes land on whole device pixels. Render hints are set
here for each primitive, so whoever calls (the view, which anti-aliases everything, or a bare
QImage painter) gets the same pixels.

Painting onto a QImage is allowed off the GUI thread (Qt's "Painting in threads"): the
recorder's thread calls `render_rgb`. Fonts are cached per thread for it (QFont is reentrant,
not thread-safe). Unlike cv2, PySide6 keeps the GIL during each QPainter call, so that thread's
painting is GUI-thread time too: a picture converts and paints only the region its annotations
cover (the live preview showed as many frames while recording as with the cv2 annotator before:
README, speed figures).
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass
from types import TracebackType

import cv2
import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter, QPen, QPolygonF, QTransform

from app.drawing.draw_list import Dots, DrawList, Fill, Lines, Outline, Placement, Polyline, Primitive, Text
from app.drawing.style import FontStyle, picture_scale
from app.inference.masks import BinaryMask

AA = QPainter.RenderHint.Antialiasing
TEXT_AA = QPainter.RenderHint.TextAntialiasing
SMOOTH = QPainter.RenderHint.SmoothPixmapTransform


def qcolor(rgb: tuple[int, ...]) -> QColor:
    return QColor(*rgb)


# -- fonts and text layout -----------------------------------------------------------------------

_fonts = threading.local()  # this thread's fonts and painting canvas


@dataclass(frozen=True)
class _Font:
    font: QFont
    metrics: QFontMetricsF
    line_height: int
    ascent: int


def _font(style: FontStyle, scale: float) -> _Font:
    size = max(1, round(style.pixel_size * scale))
    cache: dict[tuple[int, bool], _Font] = _fonts.__dict__.setdefault("cache", {})
    found = cache.get((size, style.bold))
    if found is None:
        font = QFont()
        font.setPixelSize(size)
        font.setBold(style.bold)
        metrics = QFontMetricsF(font)
        found = _Font(font, metrics, math.ceil(metrics.height()), round(metrics.ascent()))
        cache[(size, style.bold)] = found
    return found


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
    f = _font(text.font, scale)
    pad = round(text.padding * scale)
    width = math.ceil(max(f.metrics.horizontalAdvance(line) for line in text.lines)) + 2 * pad
    return TextLayout(f.font, width, f.line_height * len(text.lines) + 2 * pad, f.line_height, f.ascent, pad)


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


# -- geometry --------------------------------------------------------------------------------------


def device_box(to_device: QTransform, box: tuple[float, float, float, float]) -> QRect:
    """A box in device pixels, its edges on whole pixels (x2/y2 exclusive, as in image pixels)."""
    x1, y1, x2, y2 = box
    a, b = to_device.map(QPointF(x1, y1)), to_device.map(QPointF(x2, y2))
    left, top = round(min(a.x(), b.x())), round(min(a.y(), b.y()))
    right, bottom = round(max(a.x(), b.x())), round(max(a.y(), b.y()))
    return QRect(left, top, right - left, bottom - top)


def mask_image(mask: BinaryMask, color: tuple[int, int, int]) -> tuple[QImage, np.ndarray]:
    """The mask's crop as an Indexed8 image whose colour table paints the 1s in `color` and leaves
    the 0s transparent. QImage does not copy: keep the returned bytes as long as the image."""
    data = np.ascontiguousarray(mask.crop(), dtype=np.uint8)
    h, w = data.shape
    image = QImage(data.data, w, h, data.strides[0] if h else w, QImage.Format.Format_Indexed8)
    image.setColorTable([QColor(0, 0, 0, 0).rgba(), qcolor(color).rgba()])
    return image, data


# -- one pass ----------------------------------------------------------------------------------------


class DevicePainter:
    """Paints primitives with `painter` in device pixels, from `with` to its end (the painter's
    state is saved and restored around it)."""

    def __init__(self, painter: QPainter, to_device: QTransform, scale: float = 1.0) -> None:
        self.painter = painter
        self.to_device = to_device
        self.scale = scale
        self._aa: bool | None = None
        self._opacity = 1.0

    def __enter__(self) -> DevicePainter:
        p = self.painter
        p.save()
        p.resetTransform()
        p.setRenderHint(TEXT_AA, True)
        p.setRenderHint(SMOOTH, False)  # mask pixels stay square at any zoom
        self._opacity = p.opacity()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.painter.restore()

    def _antialias(self, on: bool) -> None:
        if on is not self._aa:
            self.painter.setRenderHint(AA, on)
            self._aa = on

    def fill(self, fill: Fill, opacity: float, image: QImage | None = None) -> None:
        """The mask at `opacity` (times the painter's own), one mask pixel per image pixel.
        `image`: a prepared `mask_image` (the view's item keeps its own)."""
        keep = None
        if image is None:
            image, keep = mask_image(fill.mask, fill.color)
        if image.isNull():
            return
        p = self.painter
        p.setWorldTransform(self.to_device)
        p.setOpacity(self._opacity * opacity)
        p.drawImage(QPointF(fill.mask.left, fill.mask.top), image)
        p.setOpacity(self._opacity)
        p.resetTransform()
        del keep

    def outline(self, rect: QRect, color: QColor, width: float, dashed: bool = False) -> None:
        """`rect`'s outline (device pixels), `width` wide inside it; a box thinner than two widths
        is filled."""
        w = max(1, round(width))
        x, y, rw, rh = rect.x(), rect.y(), rect.width(), rect.height()
        if rw <= 0 or rh <= 0:
            return
        p = self.painter
        if rw <= 2 * w or rh <= 2 * w:
            p.fillRect(rect, color)
        elif not dashed:  # four strips: the same pixels as a w-wide pen inside, 4x cheaper
            p.fillRect(QRect(x, y, rw, w), color)
            p.fillRect(QRect(x, y + rh - w, rw, w), color)
            p.fillRect(QRect(x, y + w, w, rh - 2 * w), color)
            p.fillRect(QRect(x + rw - w, y + w, w, rh - 2 * w), color)
        else:
            self._antialias(False)
            pen = QPen(color, w)
            pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
            pen.setStyle(Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(QRectF(x + w / 2, y + w / 2, rw - w, rh - w))

    def box(self, outline: Outline) -> None:
        self.outline(
            device_box(self.to_device, outline.box), qcolor(outline.color), outline.width * self.scale
        )

    def polyline(self, line: Polyline) -> None:
        self._antialias(True)
        self.painter.setPen(QPen(qcolor(line.color), line.width * self.scale))
        self.painter.drawPolyline(QPolygonF([self.to_device.map(QPointF(x, y)) for x, y in line.points]))

    def lines(self, lines: Lines) -> None:
        self._antialias(True)
        self.painter.setPen(QPen(qcolor(lines.color), lines.width * self.scale))
        m = self.to_device.map
        self.painter.drawLines([QLineF(m(QPointF(*a)), m(QPointF(*b))) for a, b in lines.segments])

    def dots(self, dots: Dots) -> None:
        self._antialias(True)
        p = self.painter
        p.setPen(QPen(qcolor(dots.outline), dots.outline_width * self.scale))
        p.setBrush(qcolor(dots.fill))
        radius = dots.radius * self.scale
        for x, y in dots.points:
            p.drawEllipse(self.to_device.map(QPointF(x, y)), radius, radius)

    def text(
        self, text: Text, anchor: QPointF, bounds: QRect | None, layout: TextLayout | None = None
    ) -> None:
        """`text` at `anchor` (device pixels; `bounds`: the picture's rect there, for ABOVE)."""
        layout = layout or text_layout(text, self.scale)
        origin = text_origin(text, layout, anchor, bounds, self.scale)
        p = self.painter
        p.setFont(layout.font)
        if text.placement is Placement.BESIDE:
            self._antialias(True)
            p.setPen(qcolor(text.color))
            for i, line in enumerate(text.lines):
                p.drawText(QPointF(origin.x(), origin.y() + i * layout.line_height), line)
            return
        self._antialias(False)
        left, top = int(origin.x()), int(origin.y())
        if text.background is not None:
            p.fillRect(QRect(left, top, layout.width, layout.height), qcolor(text.background))
        p.setPen(qcolor(text.color))
        for i, line in enumerate(text.lines):
            baseline = top + layout.padding + i * layout.line_height + layout.ascent
            p.drawText(QPointF(left + layout.padding, baseline), line)

    def primitive(self, primitive: Primitive, bounds: QRect | None) -> None:
        if isinstance(primitive, Fill):
            self.fill(primitive, primitive.opacity)
        elif isinstance(primitive, Outline):
            self.box(primitive)
        elif isinstance(primitive, Lines):
            self.lines(primitive)
        elif isinstance(primitive, Polyline):
            self.polyline(primitive)
        elif isinstance(primitive, Dots):
            self.dots(primitive)
        else:
            self.text(primitive, self.to_device.map(QPointF(*primitive.anchor)), bounds)


# -- a whole picture -----------------------------------------------------------------------------


Region = tuple[int, int, int, int]  # x1, y1, x2, y2 (exclusive) in picture pixels


def _extent(primitive: Primitive, scale: float, bounds: QRect, layout: TextLayout | None) -> Region:
    """Where a primitive may paint in a picture (scale: its sizes' factor), with room for
    anti-aliasing."""
    if isinstance(primitive, Fill):
        return primitive.mask.bbox()
    if isinstance(primitive, Outline):
        x1, y1, x2, y2 = primitive.box
        return math.floor(x1) - 1, math.floor(y1) - 1, math.ceil(x2) + 1, math.ceil(y2) + 1
    if isinstance(primitive, Text):
        assert layout is not None
        origin = text_origin(primitive, layout, QPointF(*primitive.anchor), bounds, scale)
        x, y = int(origin.x()), int(origin.y())
        if primitive.placement is Placement.BESIDE:  # from the first baseline
            y -= layout.line_height
        return x - 2, y - 2, x + layout.width + 2, y + layout.height + layout.line_height + 2
    if isinstance(primitive, Lines):
        points = [p for segment in primitive.segments for p in segment]
        margin = math.ceil(primitive.width * scale / 2) + 2
    elif isinstance(primitive, Polyline):
        points = list(primitive.points)
        margin = math.ceil(primitive.width * scale / 2) + 2
    else:
        points = list(primitive.points)
        margin = math.ceil((primitive.radius + primitive.outline_width) * scale) + 2
    xs, ys = [x for x, _ in points], [y for _, y in points]
    return (
        math.floor(min(xs)) - margin,
        math.floor(min(ys)) - margin,
        math.ceil(max(xs)) + margin,
        math.ceil(max(ys)) + margin,
    )


@dataclass
class _Canvas:
    words: np.ndarray  # the picture's bytes, Format_RGB32 (0xffRRGGBB words)
    image: QImage


def _canvas(h: int, w: int, keep: bool) -> _Canvas:
    """A Format_RGB32 QImage over its own bytes. keep: this thread's canvas, reused from frame to
    frame (a recording: a new buffer costs page faults, and a new QImage its own paint engine,
    whose glyph cache starts empty: text then costs twice as much); else a new one (an export:
    a big photo's is not kept)."""
    canvas: _Canvas | None = _fonts.__dict__.get("canvas") if keep else None
    if canvas is None or canvas.words.shape != (h, w, 4):
        words = np.empty((h, w, 4), np.uint8)
        canvas = _Canvas(words, QImage(words.data, w, h, words.strides[0], QImage.Format.Format_RGB32))
        if keep:
            _fonts.canvas = canvas
    return canvas


def _to_rgb32(rgb: np.ndarray, words: np.ndarray) -> None:
    if sys.byteorder == "little":
        cv2.cvtColor(rgb, cv2.COLOR_RGB2BGRA, dst=words)
    else:
        words[..., 0], words[..., 1:] = 255, rgb


def _from_rgb32(words: np.ndarray, rgb: np.ndarray) -> None:
    if sys.byteorder == "little":
        cv2.cvtColor(words, cv2.COLOR_BGRA2RGB, dst=rgb)
    else:
        rgb[...] = words[..., 1:]


def render_rgb(
    image: np.ndarray, drawing: DrawList, scale: float | None = None, in_place: bool = False
) -> np.ndarray:
    """`image` (H, W, 3 RGB uint8) with `drawing` painted in, at the picture's own size (`scale`
    default: `picture_scale`). `in_place`: the result goes into `image` itself (the recorder's
    own copy of the frame)."""
    h, w = image.shape[:2]
    scale = picture_scale(w, h) if scale is None else scale
    writable = in_place and image.flags.c_contiguous and image.flags.writeable and image.dtype == np.uint8
    out = image if writable else np.array(image, dtype=np.uint8, order="C")
    primitives = list(drawing.primitives())
    bounds = QRect(0, 0, w, h)
    layouts = {id(p): text_layout(p, scale) for p in primitives if isinstance(p, Text)}
    # Only the region the annotations cover is converted to the canvas and back.
    x1, y1, x2, y2 = w, h, 0, 0
    for p in primitives:
        a, b, c, d = _extent(p, scale, bounds, layouts.get(id(p)))
        x1, y1, x2, y2 = min(x1, a), min(y1, b), max(x2, c), max(y2, d)
    x1, y1, x2, y2 = max(x1, 0), max(y1, 0), min(x2, w), min(y2, h)
    if x1 >= x2 or y1 >= y2:
        return out
    region = np.s_[y1:y2, x1:x2]
    # Painted on Qt's RGB32, the format its raster engine is fast on (anti-aliased lines ~25x
    # faster than on RGB888, which it converts span by span); the two conversions cost less.
    canvas = _canvas(h, w, keep=in_place)
    _to_rgb32(out[region], canvas.words[region])
    painter = QPainter(canvas.image)
    try:
        with DevicePainter(painter, QTransform(), scale) as device:
            for p in primitives:
                if isinstance(p, Text):
                    device.text(p, QPointF(*p.anchor), bounds, layouts[id(p)])
                else:
                    device.primitive(p, bounds)
    finally:
        painter.end()
    _from_rgb32(canvas.words[region], out[region])
    return out


def render_rgb_in_place(image: np.ndarray, drawing: DrawList) -> np.ndarray:
    """The recorder's painter (app.pipeline.recording.PaintFrame): into its own copy of the frame,
    on its own thread."""
    return render_rgb(image, drawing, in_place=True)
