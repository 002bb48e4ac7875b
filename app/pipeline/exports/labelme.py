"""labelme JSON, one `stem.json` per image: a "rectangle" shape per detection (the score in
its description and in "score"), `imagePath` relative to the JSON file so labelme opens the
image beside its results, `imageData` null (the image is not copied in)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.pipeline.exports.extras import labelme_extra_shapes
from app.pipeline.exports.images import ExportImage

LABELME_VERSION = "5.5.0"  # the file layout of labelme 5.x, which later versions still read


def image_path_from(json_path: Path, image: ExportImage) -> str:
    """Where labelme finds the image, relative to the JSON file's folder (posix separators)."""
    if image.frame is not None:
        return Path(image.file_name).name  # a video frame: no image file to point at
    rel = os.path.relpath(os.path.abspath(image.source), os.path.abspath(json_path.parent))
    return Path(rel).as_posix()


def labelme_document(image: ExportImage, json_path: Path) -> dict[str, Any]:
    shapes: list[dict[str, Any]] = []
    for det in image.detections:
        x1, y1, x2, y2 = (round(float(v), 2) for v in det.box)
        shapes.append(
            {
                "label": det.label,
                "points": [[x1, y1], [x2, y2]],
                "group_id": None,
                "description": f"score {float(det.score):.3f}",
                "shape_type": "rectangle",
                "flags": {},
                "score": round(float(det.score), 5),
            }
        )
        shapes.extend(labelme_extra_shapes(det, image))
    return {
        "version": LABELME_VERSION,
        "flags": {},
        "shapes": shapes,
        "imagePath": image_path_from(json_path, image),
        "imageData": None,
        "imageHeight": image.height,
        "imageWidth": image.width,
    }
