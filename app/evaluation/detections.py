"""A model's results as COCO detections (the "results" list COCOeval reads), for the images
evaluated, with each detection's image, category and score kept beside for the operating
points.

- bbox: every detection's box; segm: its mask (COCO RLE); keypoints: its keypoints (the
  model's per-keypoint score in place of COCO's visibility, which OKS does not read).
- A semantic segmentation model (one mask per class, no instances) gives one instance per
  connected region of each class's mask, scored by its share of the class's pixels (the
  largest region first): touching objects make one instance, separate ones stay apart.
- Detections of classes the dataset does not have are not evaluated (counted)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.annotations.regions import region_instances
from app.evaluation.classes import ClassMatch
from app.evaluation.iou_type import IouType
from app.inference.result import Detection, InferenceResult, record_pixel, record_score


@dataclass
class Detections:
    anns: list[dict[str, Any]]  # COCO results; COCO gives annotation i the id i + 1
    image: np.ndarray  # image index per detection
    category: np.ndarray  # category index per detection
    score: np.ndarray
    not_in_dataset: int  # detections of model classes the dataset does not have
    unusable: int  # detections without what the IoU type needs (no mask, no keypoints)


def build_detections(
    results: Mapping[int, InferenceResult], classes: ClassMatch, iou_type: IouType = IouType.BBOX
) -> Detections:
    """`results`: image index -> the model's (successful) result for that image."""
    anns: list[dict[str, Any]] = []
    image: list[int] = []
    category: list[int] = []
    score: list[float] = []
    not_in_dataset = unusable = 0
    category_of: dict[str, int | None] = {}  # label -> category (a handful of labels, many detections)
    boxes = iou_type is IouType.BBOX
    for index in sorted(results):
        result = results[index]
        dets = result.detections
        if not dets and result.masks:
            dets = region_instances(result.masks)
        for det in dets:
            label = det.label
            if label not in category_of:
                category_of[label] = classes.category_of_detection(label)
            cat = category_of[label]
            if cat is None:
                not_in_dataset += 1
                continue
            if boxes:  # inline: the common case, ~10 detections an image
                # The box and score the records write: the figures are exactly the records'.
                x1, y1, x2, y2 = (record_pixel(v) for v in det.box)
                ann: dict[str, Any] | None = (
                    {"bbox": [x1, y1, x2 - x1, y2 - y1]} if x2 > x1 and y2 > y1 else None
                )
            else:
                ann = _annotation(det, iou_type)
            if ann is None:
                unusable += 1
                continue
            s = record_score(det.score)
            ann["image_id"] = index + 1
            ann["category_id"] = cat + 1
            ann["score"] = s
            anns.append(ann)
            image.append(index)
            category.append(cat)
            score.append(s)
    return Detections(
        anns,
        np.asarray(image, np.int64),
        np.asarray(category, np.int64),
        np.asarray(score, np.float64),
        not_in_dataset,
        unusable,
    )


def _annotation(det: Detection, iou_type: IouType) -> dict[str, Any] | None:
    if iou_type is IouType.SEGM:
        return {"segmentation": det.mask.rle()} if det.mask is not None and det.mask.area > 0 else None
    if iou_type is IouType.KEYPOINTS:
        if not det.keypoints:
            return None
        return {
            "keypoints": [
                v for x, y, s in det.keypoints for v in (record_pixel(x), record_pixel(y), float(s))
            ]
        }
    x1, y1, x2, y2 = (record_pixel(v) for v in det.box)
    if x2 <= x1 or y2 <= y1:
        return None
    return {"bbox": [x1, y1, x2 - x1, y2 - y1]}
