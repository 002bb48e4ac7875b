"""The draw list: what is drawn for a result, as primitives in image pixels, built once from the
result and the style (Qt-free). Like labelme's Shape, one `DetectionShape` per detection is what
the view's item draws, and what the PNG export and the recorded video paint, in the same order.

Geometry (boxes, points, anchors) is in image pixels; widths, radii, fonts and paddings are in
screen pixels (the painter multiplies them by its scale: 1 in the view, `picture_scale` for a
picture saved at its own size).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.drawing.style import (
    RGB,
    RGBA,
    AnnotationStyle,
    FontStyle,
    Point,
    classes_line,
    detection_label,
    text_rgb_on,
    track_rgb,
)
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, SemanticMask

Box = tuple[float, float, float, float]
Size = tuple[int, int]  # (width, height) of the picture


@dataclass(frozen=True, slots=True)
class Fill:
    """A mask's pixels in one colour at `opacity`; one mask pixel is one image pixel."""

    mask: BinaryMask
    color: RGB
    opacity: float


@dataclass(frozen=True, slots=True)
class Outline:
    """A box's outline, `width` wide, inside the box: its outer edge is the box's edge (snapped
    to whole device pixels, so it is crisp at any zoom). Dashed: e.g. a labelled object (ground
    truth), told apart from the model's solid boxes."""

    box: Box
    color: RGB
    width: float
    dashed: bool = False


@dataclass(frozen=True, slots=True)
class Polyline:
    """One line through `points` (anti-aliased, joined), e.g. a trail."""

    points: tuple[Point, ...]
    color: RGB
    width: float


@dataclass(frozen=True, slots=True)
class Lines:
    """Separate segments in one colour (anti-aliased), e.g. a skeleton's edges or a face mesh's
    contours: painted in one call, however many."""

    segments: tuple[tuple[Point, Point], ...]
    color: RGB
    width: float


@dataclass(frozen=True, slots=True)
class Dots:
    """Round dots of `radius` at `points`, filled, with an outline."""

    points: tuple[Point, ...]
    radius: float
    fill: RGB
    outline: RGB
    outline_width: float


class Placement(enum.Enum):
    # A box's tag: over the anchor (the box's top-left corner), or just under it when the
    # picture has no room above; moved left as needed to stay within the picture's width.
    ABOVE = "above"
    # Under the anchor (a box's bottom-left corner), or just over it when the picture has no
    # room below; kept within the picture's width as ABOVE (e.g. a labelled object's tag, out
    # of the way of the model's tag above the same object).
    BELOW = "below"
    CORNER = "corner"  # the text box's top-left corner at the anchor
    BESIDE = "beside"  # no box: the first baseline starts at the anchor plus `offset`


@dataclass(frozen=True, slots=True)
class Text:
    """Lines of text, on a filled box when `background` is given."""

    anchor: Point
    lines: tuple[str, ...]
    font: FontStyle
    color: RGB
    background: RGBA | None
    padding: float
    placement: Placement
    offset: Point = (0.0, 0.0)


Primitive = Fill | Outline | Lines | Polyline | Dots | Text


@dataclass(frozen=True)
class DetectionShape:
    """Everything drawn for one detection, in paint order: its mask, its outline, its tag, then its
    keypoints (the skeleton's visible edges, then the visible points' dots)."""

    detection: Detection
    fill: Fill | None
    outline: Outline
    tag: Text
    visible: tuple[bool, ...]  # per keypoint: scores at least the style's visible_score
    edges: tuple[tuple[int, int], ...]  # the skeleton edges drawn (both ends visible)
    skeleton: Lines | None  # the edges drawn (None: none)
    dots: Dots | None  # the visible points (None: no keypoints, or keypoint_dots off)
    # With keypoint_dots off: the visible points' dots, for a view to show under the mouse only
    # (a face mesh's contours stay readable); never painted in a picture. None otherwise.
    hover_dots: Dots | None = None
    # An oriented box (OBB models): its closed outline, drawn instead of `outline` (which
    # stays the axis-aligned box around it, for the tag and hit tests).
    rotated: Polyline | None = None

    def primitives(self) -> Iterator[Primitive]:
        if self.fill is not None:
            yield self.fill
        yield self.outline if self.rotated is None else self.rotated
        yield self.tag
        if self.skeleton is not None:
            yield self.skeleton
        if self.dots is not None:
            yield self.dots


@dataclass(frozen=True)
class TrailShape:
    """One track's trail: the line through its recent centres, a dot and "#id" at its head."""

    track_id: int
    line: Polyline | None  # None while the trail is a single point
    head: Dots
    tag: Text

    def primitives(self) -> Iterator[Primitive]:
        if self.line is not None:
            yield self.line
        yield self.head
        yield self.tag


@dataclass(frozen=True)
class DrawList:
    """A whole picture's annotations, in the order the view stacks them: semantic masks, the
    detections one by one, the top-k corner, the trails."""

    size: Size
    semantic: tuple[Fill, ...] = ()
    detections: tuple[DetectionShape, ...] = ()
    classes: Text | None = None
    trails: tuple[TrailShape, ...] = ()

    def primitives(self) -> Iterator[Primitive]:
        yield from self.semantic
        for shape in self.detections:
            yield from shape.primitives()
        if self.classes is not None:
            yield self.classes
        for trail in self.trails:
            yield from trail.primitives()


class TrailSource(Protocol):
    """A tracked object (app.pipeline.tracking.Track): its id and recent box centres."""

    @property
    def track_id(self) -> int: ...

    @property
    def trail(self) -> Sequence[tuple[float, float]]: ...


@dataclass(frozen=True)
class FrozenTrail:
    """A track's trail as it was at one frame (a Track's own trail keeps growing)."""

    track_id: int
    trail: tuple[Point, ...]


def frozen_trails(tracks: Sequence[TrailSource]) -> tuple[FrozenTrail, ...]:
    return tuple(FrozenTrail(t.track_id, tuple(t.trail)) for t in tracks)


def detection_shape(detection: Detection, style: AnnotationStyle, color: RGB | None = None) -> DetectionShape:
    """`color`: instead of the class's (e.g. a compared model's own colour)."""
    color = style.class_rgb(detection.class_id) if color is None else color
    x1, y1, x2, y2 = (float(v) for v in detection.box)
    mask = detection.mask
    fill = Fill(mask, color, style.mask_opacity) if mask is not None and mask.area else None
    tag = Text(
        (x1, y1),
        (detection_label(detection.label, detection.score),),
        style.label_font,
        text_rgb_on(color),
        (*color, 255),
        style.label_padding,
        Placement.ABOVE,
    )
    points = detection.keypoints or ()
    shown = tuple(s >= style.visible_score for _, _, s in points)
    n = len(points)
    edges = tuple((a, b) for a, b in style.skeleton if 0 <= a < n and 0 <= b < n and shown[a] and shown[b])
    segments = tuple(((points[a][0], points[a][1]), (points[b][0], points[b][1])) for a, b in edges)
    skeleton = Lines(segments, color, style.skeleton_width) if segments else None
    visible = tuple((x, y) for (x, y, _), v in zip(points, shown, strict=True) if v)
    point_dots = None
    if visible:
        point_dots = Dots(
            visible, style.keypoint_radius, color, style.keypoint_outline, style.keypoint_outline_width
        )
    dots, hover_dots = (point_dots, None) if style.keypoint_dots else (None, point_dots)
    outline = Outline((x1, y1, x2, y2), color, style.box_width)
    corners = detection.polygon()
    rotated = Polyline((*corners, corners[0]), color, style.box_width) if corners else None
    return DetectionShape(detection, fill, outline, tag, shown, edges, skeleton, dots, hover_dots, rotated)


def semantic_fill(mask: SemanticMask, style: AnnotationStyle, color: RGB | None = None) -> Fill | None:
    """`color`: instead of the class's (e.g. a compared model's own colour); None: no pixels."""
    if not mask.area:
        return None
    return Fill(mask.mask, style.class_rgb(mask.class_id) if color is None else color, style.mask_opacity)


def classes_text(classes: Sequence[ClassScore], style: AnnotationStyle) -> Text | None:
    if not classes:
        return None
    return Text(
        (0.0, 0.0),
        tuple(classes_line(c.label, c.score) for c in classes),
        style.classes_font,
        style.classes_foreground,
        style.classes_background,
        style.classes_padding,
        Placement.CORNER,
    )


def trail_shape(track: TrailSource, style: AnnotationStyle) -> TrailShape | None:
    points = tuple((float(x), float(y)) for x, y in track.trail)
    if not points:
        return None
    color = track_rgb(track.track_id)
    line = Polyline(points, color, style.trail_width) if len(points) > 1 else None
    head = Dots((points[-1],), style.trail_head_radius, color, color, style.trail_width)
    tag = Text(
        points[-1],
        (f"#{track.track_id}",),
        style.trail_font,
        color,
        None,
        0.0,
        Placement.BESIDE,
        style.trail_text_offset,
    )
    return TrailShape(track.track_id, line, head, tag)


def draw_list(
    size: Size,
    detections: Sequence[Detection],
    masks: Sequence[SemanticMask] | None = None,
    classes: Sequence[ClassScore] | None = None,
    style: AnnotationStyle | None = None,
    tracks: Sequence[TrailSource] = (),
) -> DrawList:
    """The draw list of one picture of `size` (width, height)."""
    style = style or AnnotationStyle()
    semantic = tuple(f for f in (semantic_fill(m, style) for m in masks or ()) if f is not None)
    trails = tuple(t for t in (trail_shape(track, style) for track in tracks) if t is not None)
    return DrawList(
        size,
        semantic,
        tuple(detection_shape(d, style) for d in detections),
        classes_text(classes or (), style),
        trails,
    )
