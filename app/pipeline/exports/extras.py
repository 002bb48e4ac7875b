"""What a detection carries beyond its box, in COCO and YOLO: instance masks (COCO RLE, YOLO-seg
lines) and keypoints (COCO keypoints, YOLO-pose lines); labelme's polygons and points are made in
labelme.py. The shapes themselves are made by app.annotations.shapes; a box-only detection adds
nothing."""

from __future__ import annotations

from typing import Any

from app.annotations.shapes import coco_keypoints, coco_segmentation, yolo_pose_line, yolo_seg_line
from app.inference.result import Detection
from app.pipeline.exports.dota import yolo_obb_line
from app.pipeline.exports.images import ExportImage


def coco_annotation_extras(det: Detection, image: ExportImage) -> dict[str, Any]:
    """`segmentation` (RLE) and `area` (the mask's pixels, not the box's) for a mask;
    `keypoints` and `num_keypoints` for keypoints."""
    extra: dict[str, Any] = {}
    if det.mask is not None:
        extra["segmentation"] = coco_segmentation(det.mask)
        extra["area"] = det.mask.area
    if det.keypoints is not None:
        extra["keypoints"], extra["num_keypoints"] = coco_keypoints(det.keypoints)
    return extra


def yolo_line_override(det: Detection, image: ExportImage) -> str | None:
    """A YOLO-OBB line for an oriented box, a YOLO-seg line for a mask, a YOLO-pose line for
    keypoints; None keeps the box line."""
    if det.obb is not None:
        return yolo_obb_line(det, image.width, image.height)
    if det.mask is not None:
        return yolo_seg_line(det, det.class_id, image.width, image.height)
    if det.keypoints is not None:
        return yolo_pose_line(det, det.class_id, image.width, image.height)
    return None
