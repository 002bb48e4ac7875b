"""One readable line on what a profile does beyond boxes (for `models` and the server panel)."""

from __future__ import annotations

from app.inference.decoding.keypoints import COCO_SKELETON
from app.inference.profile_kinds import KeypointStyle, OutputFormat, Task
from app.inference.profiles.profile_types import ModelProfile


def _names(names: tuple[str, ...], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (" ..." if len(names) > limit else "")


def task_summary(p: ModelProfile) -> str:
    if p.task is Task.POSE:
        k, d = p.kpt_shape or (0, 0)
        count = f"{k} keypoints" if k else "keypoints"
        values = "x, y, score" if d == 3 else "x, y"
        source = (
            f"from {p.output_names[-1]}"
            if p.output_format is OutputFormat.EFFICIENTNMS
            else "in the raw output"
        )
        names = f": {_names(p.keypoint_names)}" if p.keypoint_names else ""
        skeleton = (
            "coco17" if p.skeleton == COCO_SKELETON else f"{len(p.skeleton)} lines" if p.skeleton else "none"
        )
        style = (
            ""
            if p.keypoint_style is KeypointStyle.DOTS
            else f" ({p.keypoint_style} only, points under the mouse)"
        )
        return f"task: pose, {count} per detection ({values}) {source}{names}; skeleton {skeleton}{style}"
    if p.task is Task.SEGMENT:
        return (
            f"task: segment, instance masks from prototypes {p.output_names[1]} "
            f"(mask threshold {p.mask_threshold:g})"
        )
    if p.task is Task.SEMANTIC:
        layout = p.map_layout or "told from the shape"
        single = f"; threshold {p.mask_threshold:g} for one-class maps" + (
            " (logits: sigmoid)" if p.logits else ""
        )
        return f"task: semantic, per-pixel map {p.output_names[0]} ({layout}){single}"
    if p.task is Task.CLASSIFY:
        scores = "logits (softmax applied)" if p.logits else "scores as given"
        return f"task: classify, top {p.top_k} of {p.output_names[0]}, {scores}"
    if p.task is Task.OBB:
        return "task: obb, oriented boxes (cx, cy, w, h, angle; box is the axis-aligned box around each)"
    return "task: detect (boxes)"
