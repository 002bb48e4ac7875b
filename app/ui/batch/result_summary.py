"""What one result shows, in a few words and a count, whatever the model does (Qt-free): boxes
("2 detections"), a semantic segmentation's classes with their share of the picture
("person 58 %"), a classifier's best class ("cat 0.93"). The thumbnails' badges and tooltips,
the batch's info line and its filters read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.inference.result import Detection, InferenceResult, SemanticMask


@dataclass(frozen=True)
class ResultSummary:
    count: int | None  # the thumbnail's badge (None: no badge, e.g. a classifier or a failure)
    text: str  # e.g. "2 detections", "person 58 %", "no detections"
    labels: frozenset[str] = field(default_factory=frozenset)  # the classes it shows


def share_text(mask: SemanticMask, width: int | None, height: int | None) -> str:
    """e.g. "person 58 %" (its share of the picture; "<1 %" for a speck)."""
    if not width or not height:
        return f"{mask.label} {mask.area} px"
    share = 100.0 * mask.area / (width * height)
    return f"{mask.label} {'<1' if 0 < share < 1 else f'{share:.0f}'} %"


def present(masks: Sequence[SemanticMask] | None) -> list[SemanticMask]:
    """The classes with pixels, largest first."""
    return sorted((m for m in masks or () if m.area), key=lambda m: -m.area)


def summarize(result: InferenceResult | None, shown: Sequence[Detection]) -> ResultSummary:
    """`shown`: the result's detections that pass the sliders."""
    if result is None:
        return ResultSummary(None, "waiting for the result")
    if not result.ok:
        return ResultSummary(None, f"{result.status.value}: {result.error or ''}".rstrip(": "))
    if shown:
        n = len(shown)
        return ResultSummary(n, f"{n} detection{'s' * (n != 1)}", frozenset(d.label for d in shown))
    classes = present(result.masks)
    if classes:
        text = " · ".join(share_text(m, result.width, result.height) for m in classes)
        return ResultSummary(len(classes), text, frozenset(m.label for m in classes))
    if result.masks is not None:
        return ResultSummary(0, "no class present")
    if result.classes:
        top = result.classes[0]
        return ResultSummary(None, f"{top.label} {top.score:.2f}", frozenset({top.label}))
    return ResultSummary(0, "no detections")
