"""What an image's errors look like on the picture, at an operating point: its labelled objects
(found, missed or ignored) and the model's false positives, as marks for the one renderer
(app/drawing/marks.py). Boxes are in pixels of the image as the model saw it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pycocotools.mask as coco_mask

from app.drawing.draw_list import Box
from app.drawing.marks import MarkKind, MarkShape, MarkStyle, mark_shape
from app.evaluation.evaluate import Evaluation
from app.evaluation.operating import FP, OperatingPoint


def image_marks(
    evaluation: Evaluation, point: OperatingPoint, index: int, style: MarkStyle | None = None
) -> list[MarkShape]:
    """The marks of dataset image `index`: every labelled object, then every detection kept at
    `point` that is a false positive (none for an image that was not evaluated)."""
    gt = evaluation.ground_truth
    names = evaluation.classes.categories
    marks: list[MarkShape] = []
    for j in np.flatnonzero(gt.ann_image == index).tolist():
        ann = gt.doc["annotations"][j]
        if gt.ann_ignored[j]:
            kind = MarkKind.IGNORED
        elif point.missed[j]:
            kind = MarkKind.MISSED
        else:
            kind = MarkKind.FOUND
        marks.append(mark_shape(kind, _xyxy(ann["bbox"]), names[int(gt.ann_category[j])], style))
    dets = evaluation.detections
    wrong = (dets.image == index) & point.kept & (evaluation.det_state == FP)
    for d in np.flatnonzero(wrong).tolist():
        box = detection_box(dets.anns[d])
        if box is not None:
            marks.append(mark_shape(MarkKind.FALSE_POSITIVE, box, names[int(dets.category[d])], style))
    return marks


def _xyxy(bbox: list[float]) -> Box:
    x, y, w, h = (float(v) for v in bbox)
    return (x, y, x + w, y + h)


def detection_box(ann: dict[str, Any]) -> Box | None:
    """A COCO result's box: its bbox, its mask's extent (segm) or its keypoints' (keypoints)."""
    if "bbox" in ann:
        return _xyxy(ann["bbox"])
    if "segmentation" in ann:
        rle = dict(ann["segmentation"])
        if isinstance(rle.get("counts"), str):
            rle["counts"] = rle["counts"].encode("ascii")
        return _xyxy([float(v) for v in coco_mask.toBbox(rle)])
    points = ann.get("keypoints") or []
    xs, ys = points[0::3], points[1::3]
    if not xs:
        return None
    return (float(min(xs)), float(min(ys)), float(max(xs)), float(max(ys)))
