"""labelme JSON, one `stem.json` per image: a "rectangle" shape per detection (the score in
its description and in "score"), its mask's polygons and a "point" per visible keypoint labelled
`class/keypoint name` (the model's names), all with the detection's own `group_id` (1, 2, ... in
the image), so several faces' points never mix. A semantic segmentation gives a polygon per
connected region of each class, each region its own group. `imagePath` is relative to the JSON
file so labelme opens the image beside its results; `imageData` null (the image is not copied in).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.annotations.shapes import labelme_shapes
from app.inference.result import record_score
from app.pipeline.exports.images import ExportImage
from app.pipeline.exports.vocabulary import ModelVocabulary

LABELME_VERSION = "5.5.0"  # the file layout of labelme 5.x, which later versions still read


def image_path_from(json_path: Path, image: ExportImage) -> str:
    """Where labelme finds the image, relative to the JSON file's folder (posix separators)."""
    if image.frame is not None:
        return Path(image.file_name).name  # a video frame: no image file to point at
    rel = os.path.relpath(os.path.abspath(image.source), os.path.abspath(json_path.parent))
    return Path(rel).as_posix()


def labelme_document(
    image: ExportImage, json_path: Path, vocabulary: ModelVocabulary | None = None
) -> dict[str, Any]:
    vocabulary = vocabulary or ModelVocabulary()
    shapes: list[dict[str, Any]] = []
    group = 0
    for det in image.detections:
        group += 1
        x1, y1, x2, y2 = (round(float(v), 2) for v in det.box)
        shapes.append(
            {
                "label": det.label,
                "points": [[x1, y1], [x2, y2]],
                "group_id": group,
                "description": f"score {float(det.score):.3f}",
                "shape_type": "rectangle",
                "flags": {},
                "score": record_score(det.score),
            }
        )
        # The mask's polygons and the visible keypoints (the rectangle is written above).
        extra = labelme_shapes(det, group, vocabulary.keypoint_list(len(det.keypoints or ())))
        shapes.extend(shape for shape in extra if shape["shape_type"] != "rectangle")
    for region in image.regions:
        group += 1
        polygons = [s for s in labelme_shapes(region, group) if s["shape_type"] == "polygon"]
        for shape in polygons:
            shape["description"] = f"{region.score:.0%} of the {region.label} pixels"
        shapes.extend(polygons)
    return {
        "version": LABELME_VERSION,
        "flags": {},
        "shapes": shapes,
        "imagePath": image_path_from(json_path, image),
        "imageData": None,
        "imageHeight": image.height,
        "imageWidth": image.width,
    }
