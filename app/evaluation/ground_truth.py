"""A dataset as a COCO ground-truth document, for the images that were evaluated, in pixels
of each image as the model saw it (the image's own size; YOLO's fractions scaled by it).

Checked here, where the image's size is known: a box wholly outside the image is dropped,
one partly outside is clipped (a note), an object of a class no model class matches is
dropped, and one without what the IoU type needs (a mask for segm, keypoints for
keypoints) is dropped too; each with the file and line or field it came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pycocotools.mask as coco_mask

from app.evaluation.classes import ClassMatch
from app.evaluation.datasets.model import (
    CLIPPED,
    MALFORMED,
    NO_SHAPE,
    OUTSIDE,
    UNKNOWN_CLASS,
    Dataset,
    GroundTruthImage,
    GroundTruthObject,
    Problem,
)
from app.evaluation.iou_type import IouType

CLIP_NOTE_PX = 1.0  # a box more than this outside the image is reported as clipped
DROPPED_BY_MAP = "class dropped by the class map"


@dataclass
class GroundTruth:
    """The COCO document and, per annotation (in `doc["annotations"]` order), its image index
    and category index; `problems` found while building it."""

    doc: dict[str, Any]
    ann_image: np.ndarray
    ann_category: np.ndarray
    ann_ignored: np.ndarray  # crowd / difficult, or (keypoints) no labelled keypoint
    problems: list[Problem] = field(default_factory=list)


def _scale(obj: GroundTruthObject, image: GroundTruthImage, w: int, h: int) -> GroundTruthObject:
    if not image.normalized:
        return obj
    box = None
    if obj.box is not None:
        x1, y1, x2, y2 = obj.box
        box = (x1 * w, y1 * h, x2 * w, y2 * h)
    polygons = None
    if obj.polygons is not None:
        polygons = [[v * (w if i % 2 == 0 else h) for i, v in enumerate(p)] for p in obj.polygons]
    keypoints = None
    if obj.keypoints is not None:
        keypoints = []
        for i in range(0, len(obj.keypoints), 3):
            x, y, v = obj.keypoints[i : i + 3]
            keypoints += [x * w, y * h, v] if v > 0 else [0.0, 0.0, 0.0]
    return GroundTruthObject(obj.label, obj.where, box, polygons, obj.rle, keypoints, obj.crowd, obj.area)


def build_ground_truth(
    dataset: Dataset,
    classes: ClassMatch,
    sizes: Mapping[int, tuple[int, int]],
    iou_type: IouType = IouType.BBOX,
    keypoint_count: int | None = None,
    keypoint_names: Sequence[str] = (),
) -> GroundTruth:
    """`sizes`: image index -> (width, height) of the images evaluated (the others are left out)."""
    problems: list[Problem] = []
    dropped_by_map = {name.casefold() for name in classes.dropped_by_map}
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    ann_image: list[int] = []
    ann_category: list[int] = []
    ann_ignored: list[bool] = []
    keypoints = iou_type is IouType.KEYPOINTS
    for index in sorted(sizes):
        image = dataset.images[index]
        w, h = sizes[index]
        images.append({"id": index + 1, "width": w, "height": h, "file_name": image.name})
        file = image.label_file or str(image.path)
        for raw in image.objects:
            category = classes.dataset_to_category.get(raw.label)
            if category is None:
                kind = DROPPED_BY_MAP if raw.label.casefold() in dropped_by_map else UNKNOWN_CLASS
                message = (
                    f"class {raw.label!r} is dropped by the class map"
                    if kind == DROPPED_BY_MAP
                    else f"class {raw.label!r} names no class of the model"
                )
                problems.append(Problem(file, raw.where, kind, message))
                continue
            ann = _plain_box(raw, image.normalized, w, h, iou_type)
            problem = None
            if ann is None:  # anything but a plain box inside the image: the full checks
                ann, problem = _annotation(_scale(raw, image, w, h), file, w, h, iou_type, keypoint_count)
            if problem is not None:
                problems.append(problem)
                if problem.dropped:
                    continue
            if ann is None:
                continue
            ann["id"] = len(annotations) + 1
            ann["image_id"] = index + 1
            ann["category_id"] = category + 1
            annotations.append(ann)
            ann_image.append(index)
            ann_category.append(category)
            ann_ignored.append(bool(ann["iscrowd"]) or (keypoints and ann["num_keypoints"] == 0))
    categories = []
    for k, name in enumerate(classes.categories):
        entry: dict[str, Any] = {"id": k + 1, "name": name, "supercategory": ""}
        if iou_type is IouType.KEYPOINTS:
            entry["keypoints"] = list(keypoint_names) or [f"keypoint {i}" for i in range(keypoint_count or 0)]
        categories.append(entry)
    doc = {"images": images, "annotations": annotations, "categories": categories}
    return GroundTruth(
        doc,
        np.asarray(ann_image, np.int64),
        np.asarray(ann_category, np.int64),
        np.asarray(ann_ignored, bool),
        problems,
    )


def _plain_box(
    obj: GroundTruthObject, normalized: bool, w: int, h: int, iou_type: IouType
) -> dict[str, Any] | None:
    """The annotation of the common case, a box well inside the image for a bbox evaluation
    (most of a dataset: kept cheap); None for anything else."""
    if iou_type is not IouType.BBOX or obj.box is None or obj.polygons or obj.rle is not None:
        return None
    x1, y1, x2, y2 = obj.box
    if normalized:
        x1, y1, x2, y2 = x1 * w, y1 * h, x2 * w, y2 * h
    if x1 < 0 or y1 < 0 or x2 > w or y2 > h or x2 <= x1 or y2 <= y1:
        return None
    area = obj.area if obj.area is not None else (x2 - x1) * (y2 - y1)
    return {"bbox": [x1, y1, x2 - x1, y2 - y1], "iscrowd": int(obj.crowd), "area": float(area)}


def _annotation(
    obj: GroundTruthObject, file: str, w: int, h: int, iou_type: IouType, keypoint_count: int | None
) -> tuple[dict[str, Any] | None, Problem | None]:
    note: Problem | None = None
    box = obj.box
    if box is None and obj.polygons:
        xs = [v for p in obj.polygons for v in p[0::2]]
        ys = [v for p in obj.polygons for v in p[1::2]]
        box = (min(xs), min(ys), max(xs), max(ys))
    if box is None and obj.rle is not None:
        x, y, bw, bh = (float(v) for v in coco_mask.toBbox(_rle(obj.rle)))
        box = (x, y, x + bw, y + bh)
    if box is None and obj.keypoints:
        xs = [obj.keypoints[i] for i in range(0, len(obj.keypoints), 3) if obj.keypoints[i + 2] > 0]
        ys = [obj.keypoints[i + 1] for i in range(0, len(obj.keypoints), 3) if obj.keypoints[i + 2] > 0]
        if xs:
            box = (min(xs), min(ys), max(xs), max(ys))
    if box is None:
        return None, Problem(file, obj.where, NO_SHAPE, f"{obj.label!r}: no box, polygon or mask")
    x1, y1, x2, y2 = box
    cx1, cy1, cx2, cy2 = max(x1, 0.0), max(y1, 0.0), min(x2, float(w)), min(y2, float(h))
    if cx2 <= cx1 or cy2 <= cy1:
        return None, Problem(
            file,
            obj.where,
            OUTSIDE,
            f"{obj.label!r} box [{x1:g}, {y1:g}, {x2:g}, {y2:g}] lies outside the {w}x{h} image",
        )
    if max(cx1 - x1, cy1 - y1, x2 - cx2, y2 - cy2) > CLIP_NOTE_PX:
        note = Problem(
            file,
            obj.where,
            CLIPPED,
            f"{obj.label!r} box [{x1:g}, {y1:g}, {x2:g}, {y2:g}] clipped to the {w}x{h} image",
            0,
        )
    bbox = [cx1, cy1, cx2 - cx1, cy2 - cy1]
    ann: dict[str, Any] = {"bbox": bbox, "iscrowd": int(obj.crowd)}
    area = obj.area
    if iou_type is IouType.SEGM:
        if obj.rle is not None:
            ann["segmentation"] = obj.rle
        elif obj.polygons:
            ann["segmentation"] = obj.polygons
        else:
            return None, Problem(
                file, obj.where, NO_SHAPE, f"{obj.label!r}: no polygon or mask (segm needs one)"
            )
        if area is None:
            rles = coco_mask.frPyObjects(ann["segmentation"], h, w) if obj.rle is None else [_rle(obj.rle)]
            area = float(coco_mask.area(coco_mask.merge(rles)))
    elif iou_type is IouType.KEYPOINTS:
        if not obj.keypoints:
            return None, Problem(
                file, obj.where, NO_SHAPE, f"{obj.label!r}: no keypoints (keypoints needs them)"
            )
        if keypoint_count is not None and len(obj.keypoints) != 3 * keypoint_count:
            return None, Problem(
                file,
                obj.where,
                MALFORMED,
                f"{obj.label!r}: {len(obj.keypoints) // 3} keypoints, the model gives {keypoint_count}",
            )
        ann["keypoints"] = obj.keypoints
        ann["num_keypoints"] = sum(1 for i in range(2, len(obj.keypoints), 3) if obj.keypoints[i] > 0)
    if area is None:
        area = bbox[2] * bbox[3]
    ann["area"] = float(area)
    return ann, note


def _rle(rle: dict[str, Any]) -> dict[str, Any]:
    """A COCO RLE pycocotools can read (compressed counts as bytes; uncompressed converted)."""
    counts, size = rle["counts"], rle["size"]
    h, w = int(size[0]), int(size[1])
    if isinstance(counts, list):
        converted: dict[str, Any] = coco_mask.frPyObjects(rle, h, w)
        return converted
    return {"size": [h, w], "counts": counts.encode("ascii") if isinstance(counts, str) else counts}
