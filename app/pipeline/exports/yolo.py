"""YOLO labels: one `stem.txt` per image, a line `class cx cy w h` (normalised to 0..1) per
detection (a YOLO-seg or YOLO-pose line for a mask or keypoints), a YOLO-seg polygon line per
connected region of a semantic segmentation's classes (regions too small for a polygon are left
out), an empty file for an image without any; `classes.txt` lists the names by id."""

from __future__ import annotations

from collections.abc import Sequence

from app.annotations.shapes import yolo_seg_line
from app.inference.result import Detection
from app.pipeline.exports.extras import yolo_line_override
from app.pipeline.exports.images import ExportImage
from app.pipeline.exports.text_safety import one_line

CLASSES_FILE = "classes.txt"


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def box_line(det: Detection, width: int, height: int) -> str:
    x1, y1, x2, y2 = (float(v) for v in det.box)
    cx, cy = _unit((x1 + x2) / 2 / width), _unit((y1 + y2) / 2 / height)
    w, h = _unit((x2 - x1) / width), _unit((y2 - y1) / height)
    return f"{det.class_id} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}"


def yolo_text(image: ExportImage) -> str:
    lines = []
    for det in image.detections:
        line = yolo_line_override(det, image)
        lines.append(line if line is not None else box_line(det, image.width, image.height))
    for region in image.regions:
        seg = yolo_seg_line(region, region.class_id, image.width, image.height)
        if seg is not None:
            lines.append(seg)
    return "".join(line + "\n" for line in lines)


def classes_text(names: Sequence[str]) -> str:
    return "".join(f"{one_line(name)}\n" for name in names)  # a class's id is its line
