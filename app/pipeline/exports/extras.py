"""Where per-detection extras plug into the box exporters.

A detection may carry more than a box (instance masks, keypoints). Each hook below takes
the detection and its image and returns what to add; every exporter calls all of them.
Register with e.g. `COCO_ANNOTATION_HOOKS.append(fn)`. With no hook, exports are boxes only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.inference.result import Detection
from app.pipeline.exports.images import ExportImage

# Extra keys of a COCO annotation, e.g. {"segmentation": ..., "keypoints": [...], "num_keypoints": n}.
# A hook may also replace "area" (a mask's pixel count instead of the box's).
CocoAnnotationHook = Callable[[Detection, ExportImage], dict[str, Any]]
COCO_ANNOTATION_HOOKS: list[CocoAnnotationHook] = []

# Extra keys of a COCO category (e.g. "keypoints" names and "skeleton"), per class id and name.
CocoCategoryHook = Callable[[int, str], dict[str, Any]]
COCO_CATEGORY_HOOKS: list[CocoCategoryHook] = []

# Extra labelme shapes for a detection (e.g. a "polygon" of its mask, "point"s of its keypoints);
# the rectangle is always written.
LabelmeShapesHook = Callable[[Detection, ExportImage], list[dict[str, Any]]]
LABELME_SHAPE_HOOKS: list[LabelmeShapesHook] = []

# A YOLO line replacing the box line (YOLO-seg polygon, YOLO-pose keypoints); None keeps the box.
YoloLineHook = Callable[[Detection, ExportImage], str | None]
YOLO_LINE_HOOKS: list[YoloLineHook] = []


def coco_annotation_extras(det: Detection, image: ExportImage) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for hook in COCO_ANNOTATION_HOOKS:
        extra.update(hook(det, image))
    return extra


def coco_category_extras(class_id: int, name: str) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for hook in COCO_CATEGORY_HOOKS:
        extra.update(hook(class_id, name))
    return extra


def labelme_extra_shapes(det: Detection, image: ExportImage) -> list[dict[str, Any]]:
    return [shape for hook in LABELME_SHAPE_HOOKS for shape in hook(det, image)]


def yolo_line_override(det: Detection, image: ExportImage) -> str | None:
    for hook in YOLO_LINE_HOOKS:
        line = hook(det, image)
        if line is not None:
            return line
    return None
