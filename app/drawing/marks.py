"""Boxes that are not the model's detections, for checking a model against labelled data: the
labelled objects (ground truth, dashed: found, missed or ignored) and the marks on the model's
false positives. Each is an outline and a tag under it, painted by the same backend as the
detections (app/ui/view/painter.py), so the view and a saved picture draw them alike."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.drawing.draw_list import Box, Outline, Placement, Text
from app.drawing.style import RGB, FontStyle, text_rgb_on


class MarkKind(enum.StrEnum):
    FOUND = "found"  # a labelled object the model found
    MISSED = "missed"  # a labelled object the model did not find
    IGNORED = "ignored"  # a labelled object no detection is judged by (crowd, VOC difficult)
    FALSE_POSITIVE = "false positive"  # a detection where no such object is labelled


@dataclass(frozen=True)
class MarkStyle:
    found: RGB = (60, 220, 120)
    missed: RGB = (255, 60, 60)
    ignored: RGB = (170, 170, 170)
    false_positive: RGB = (255, 60, 60)
    width: float = 2.0  # screen pixels, like the detections' boxes
    font: FontStyle = field(default_factory=lambda: FontStyle(pixel_size=11))
    padding: float = 2.0

    def color(self, kind: MarkKind) -> RGB:
        return {
            MarkKind.FOUND: self.found,
            MarkKind.MISSED: self.missed,
            MarkKind.IGNORED: self.ignored,
            MarkKind.FALSE_POSITIVE: self.false_positive,
        }[kind]


@dataclass(frozen=True)
class MarkShape:
    """One mark: its outline (dashed for a labelled object, solid over a false positive's box)
    and its tag under the box."""

    kind: MarkKind
    outline: Outline
    tag: Text

    def primitives(self) -> Iterator[Outline | Text]:
        yield self.outline
        yield self.tag


def mark_text(kind: MarkKind, label: str) -> str:
    """e.g. "labelled face", "missed face", "face (ignored)", "false positive"."""
    if kind is MarkKind.FOUND:
        return f"labelled {label}"
    if kind is MarkKind.MISSED:
        return f"missed {label}"
    if kind is MarkKind.IGNORED:
        return f"{label} (ignored)"
    return f"false positive {label}"


def mark_shape(kind: MarkKind, box: Box, label: str, style: MarkStyle | None = None) -> MarkShape:
    style = style or MarkStyle()
    color = style.color(kind)
    x1, y1, x2, y2 = (float(v) for v in box)
    dashed = kind is not MarkKind.FALSE_POSITIVE
    tag = Text(
        (x1, y2),
        (mark_text(kind, label),),
        style.font,
        text_rgb_on(color),
        (*color, 230),
        style.padding,
        Placement.BELOW,
    )
    return MarkShape(kind, Outline((x1, y1, x2, y2), color, style.width, dashed), tag)
