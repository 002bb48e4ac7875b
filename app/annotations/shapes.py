"""One detection's mask and keypoints in the shapes annotation formats use.

- COCO: `coco_segmentation` (RLE, exact), `coco_polygons` (outer contours, [x1, y1, ...]),
  `coco_keypoints` ([x, y, v] * K and num_keypoints);
- labelme: `labelme_shapes` (rectangle, polygons of the mask, one point per keypoint),
  `semantic_labelme_shapes` (polygons of each class of a semantic map);
- YOLO: `yolo_seg_line` (`class x1 y1 x2 y2 ...`) and `yolo_pose_line` (`class cx cy w h
  x1 y1 [v1] ...`), every coordinate normalised by the image size.

Keypoint visibility follows COCO: 2 (labelled, visible) when the model's score is at least
`visible_score`, else 0 with x = y = 0 (not labelled). Polygons run through the centres of
the mask's boundary pixels (OpenCV contours), the convention labelme and YOLO rasterise
back with; holes are not represented (COCO RLE keeps them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from app.inference.decoding.keypoints import VISIBLE_SCORE
from app.inference.masks import BinaryMask
from app.inference.result import Detection, Keypoint, SemanticMask


def coco_segmentation(mask: BinaryMask) -> dict[str, Any]:
    """COCO RLE ({"size": [h, w], "counts": str}), exact: what COCO results accept."""
    return mask.rle()


def mask_polygons(mask: BinaryMask, min_points: int = 3) -> list[np.ndarray]:
    """Outer contours of the mask as (n, 2) float arrays of x, y in image pixels (boundary
    pixel centres), largest first; contours of fewer than `min_points` points dropped."""
    crop = np.ascontiguousarray(mask.crop(), dtype=np.uint8)
    if not crop.size or not crop.any():
        return []
    contours, _ = cv2.findContours(crop, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    offset = np.array([mask.left, mask.top], np.float64)
    polygons = [c.reshape(-1, 2).astype(np.float64) + offset for c in contours if len(c) >= min_points]
    return sorted(polygons, key=lambda p: -abs(cv2.contourArea(p.astype(np.float32))))


def coco_polygons(mask: BinaryMask) -> list[list[float]]:
    """COCO polygon segmentation: one flat [x1, y1, x2, y2, ...] list per outer contour."""
    return [[round(float(v), 2) for v in polygon.reshape(-1)] for polygon in mask_polygons(mask)]


def coco_keypoints(
    keypoints: Sequence[Keypoint], visible_score: float = VISIBLE_SCORE
) -> tuple[list[float], int]:
    """COCO `keypoints` ([x, y, v] per keypoint) and `num_keypoints` (how many are labelled)."""
    flat: list[float] = []
    labelled = 0
    for x, y, score in keypoints:
        if score >= visible_score:
            flat += [round(float(x), 2), round(float(y), 2), 2]
            labelled += 1
        else:
            flat += [0, 0, 0]
    return flat, labelled


def _box_shape(det: Detection) -> dict[str, Any]:
    x1, y1, x2, y2 = (round(float(v), 2) for v in det.box)
    return _shape(det.label, [[x1, y1], [x2, y2]], "rectangle", det.score)


def _shape(label: str, points: list[list[float]], kind: str, score: float | None = None) -> dict[str, Any]:
    shape: dict[str, Any] = {"label": label, "points": points, "group_id": None}
    shape.update({"description": "", "shape_type": kind, "flags": {}})
    if score is not None:
        shape["description"] = f"score {score:.4f}"
    return shape


def labelme_shapes(
    det: Detection,
    group_id: int | None = None,
    keypoint_names: Sequence[str] = (),
    visible_score: float = VISIBLE_SCORE,
) -> list[dict[str, Any]]:
    """labelme `shapes` for one detection: its box, its mask's polygons and its visible
    keypoints (label "<class>/<keypoint name>"), tied together by `group_id`."""
    shapes = [_box_shape(det)]
    if det.mask is not None:
        for polygon in mask_polygons(det.mask):
            shapes.append(
                _shape(det.label, [[round(float(x), 2), round(float(y), 2)] for x, y in polygon], "polygon")
            )
    for i, (x, y, score) in enumerate(det.keypoints or ()):
        if score >= visible_score:
            name = keypoint_names[i] if i < len(keypoint_names) else f"keypoint {i}"
            shapes.append(
                _shape(f"{det.label}/{name}", [[round(float(x), 2), round(float(y), 2)]], "point", score)
            )
    for shape in shapes:
        shape["group_id"] = group_id
    return shapes


def semantic_labelme_shapes(masks: Sequence[SemanticMask]) -> list[dict[str, Any]]:
    """labelme polygons of every class region of a semantic segmentation."""
    return [
        _shape(m.label, [[round(float(x), 2), round(float(y), 2)] for x, y in polygon], "polygon")
        for m in masks
        for polygon in mask_polygons(m.mask)
    ]


def _norm(value: float, size: int) -> str:
    return f"{min(max(value / size, 0.0), 1.0):.6f}"


def yolo_seg_line(det: Detection, class_index: int, width: int, height: int) -> str | None:
    """`class x1 y1 x2 y2 ...` (largest polygon of the mask, normalised), or None without a
    mask (or an empty one)."""
    polygons = mask_polygons(det.mask) if det.mask is not None else []
    if not polygons:
        return None
    coords = " ".join(f"{_norm(x, width)} {_norm(y, height)}" for x, y in polygons[0])
    return f"{class_index} {coords}"


def yolo_pose_line(
    det: Detection,
    class_index: int,
    width: int,
    height: int,
    kpt_dims: int = 3,
    visible_score: float = VISIBLE_SCORE,
) -> str:
    """`class cx cy w h` then per keypoint `x y` (kpt_dims 2) or `x y v` (3, v as COCO),
    normalised; keypoints below `visible_score` are 0 0 (0)."""
    if kpt_dims not in (2, 3):
        raise ValueError(f"kpt_dims must be 2 or 3, got {kpt_dims}")
    x1, y1, x2, y2 = det.box
    parts = [str(class_index), _norm((x1 + x2) / 2, width), _norm((y1 + y2) / 2, height)]
    parts += [_norm(x2 - x1, width), _norm(y2 - y1, height)]
    for x, y, score in det.keypoints or ():
        visible = score >= visible_score
        parts += [_norm(x, width), _norm(y, height)] if visible else ["0", "0"]
        if kpt_dims == 3:
            parts.append("2" if visible else "0")
    return " ".join(parts)
