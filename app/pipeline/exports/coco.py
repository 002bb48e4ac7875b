"""COCO detection JSON: images (file names, sizes), categories, annotations with scores.

Category ids are the model's class ids + 1 (COCO keeps 0 free); `category_ids` maps them
otherwise (e.g. to the 91-id numbering of the COCO data set). Boxes are `[x, y, w, h]` in
pixels; `area` is the box's unless a hook gives a mask's. A model with keypoints gives every
category its `keypoints` (the names) and `skeleton` (1-based pairs, as COCO's person category).
A semantic segmentation is written as one annotation per connected region of each class
(RLE `segmentation`, its pixels as `area`, no score: the model scores pixels, not regions).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.annotations.shapes import coco_segmentation
from app.inference.result import record_score
from app.pipeline.exports.extras import coco_annotation_extras
from app.pipeline.exports.images import ExportImage, class_names
from app.pipeline.exports.vocabulary import ModelVocabulary
from app.system.atomic_files import replacing


def box_xywh(box: Sequence[float]) -> list[float]:
    x1, y1, x2, y2 = (float(v) for v in box)
    return [round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)]


def keypoint_count(images: Sequence[ExportImage], vocabulary: ModelVocabulary) -> int:
    """Keypoints per detection: the model's names, or the most any detection carries."""
    seen = max((len(d.keypoints or ()) for image in images for d in image.detections), default=0)
    return max(seen, len(vocabulary.keypoint_names))


def coco_category(category_id: int, name: str, keypoints: int, vocabulary: ModelVocabulary) -> dict[str, Any]:
    category: dict[str, Any] = {"id": category_id, "name": name, "supercategory": ""}
    if keypoints:
        category["keypoints"] = vocabulary.keypoint_list(keypoints)
        category["skeleton"] = [
            [a + 1, b + 1] for a, b in vocabulary.skeleton if a < keypoints and b < keypoints
        ]
    return category


def coco_document(
    images: Sequence[ExportImage],
    vocabulary: ModelVocabulary | Sequence[str] = (),
    *,
    category_ids: Mapping[int, int] | None = None,
    description: str = "Triton Inference Viewer detections",
) -> dict[str, Any]:
    vocabulary = ModelVocabulary.of(vocabulary)
    names = class_names(images, vocabulary.labels)

    def category(class_id: int) -> int:
        return category_ids[class_id] if category_ids is not None else class_id + 1

    doc_images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for image_id, image in enumerate(images, start=1):
        entry: dict[str, Any] = {
            "id": image_id,
            "file_name": image.file_name,
            "width": image.width,
            "height": image.height,
        }
        if image.frame is not None:
            entry["video"], entry["frame"] = image.name, image.frame
        doc_images.append(entry)
        for det in image.detections:
            bbox = box_xywh(det.box)
            annotation = {
                "id": len(annotations) + 1,
                "image_id": image_id,
                "category_id": category(det.class_id),
                "bbox": bbox,
                "area": round(bbox[2] * bbox[3], 2),
                "iscrowd": 0,
                "segmentation": [],
                "score": record_score(det.score),
            }
            annotation.update(coco_annotation_extras(det, image))
            annotations.append(annotation)
        for region in image.regions:
            assert region.mask is not None  # a region is its mask
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": category(region.class_id),
                    "bbox": box_xywh(region.box),
                    "area": region.mask.area,
                    "iscrowd": 0,
                    "segmentation": coco_segmentation(region.mask),
                }
            )
    keypoints = keypoint_count(images, vocabulary)
    categories = [coco_category(category(i), name, keypoints, vocabulary) for i, name in enumerate(names)]
    return {
        "info": {
            "description": description,
            "date_created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        },
        "licenses": [],
        "images": doc_images,
        "categories": categories,
        "annotations": annotations,
    }


def write_coco(
    path: str | Path, images: Sequence[ExportImage], vocabulary: ModelVocabulary | Sequence[str] = ()
) -> int:
    """Write the COCO file whole (an existing one stays as it was if that fails); returns the
    number of annotations."""
    doc = coco_document(images, vocabulary)
    with replacing(path) as f:
        json.dump(doc, f, ensure_ascii=False)
    return len(doc["annotations"])
