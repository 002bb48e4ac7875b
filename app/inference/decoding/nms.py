"""Greedy non-maximum suppression in numpy (class-agnostic and per-class)."""

from __future__ import annotations

import numpy as np


def box_iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one x1, y1, x2, y2 box against (N, 4) boxes (continuous areas, no +1)."""
    xx1 = np.maximum(box[0], boxes[:, 0])
    yy1 = np.maximum(box[1], boxes[:, 1])
    xx2 = np.minimum(box[2], boxes[:, 2])
    yy2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
    area = max(float(box[2] - box[0]), 0.0) * max(float(box[3] - box[1]), 0.0)
    areas = np.clip(boxes[:, 2] - boxes[:, 0], 0, None) * np.clip(boxes[:, 3] - boxes[:, 1], 0, None)
    union = area + areas - inter
    # Two empty boxes have union 0: call that IoU 0 rather than dividing by zero.
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def nms(
    boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, max_detections: int | None = None
) -> np.ndarray:
    """Indices of the boxes kept, best score first. A box is dropped when its IoU with a
    better-scoring kept box is > iou_threshold (same rule as torchvision.ops.nms)."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(b) != len(s):
        raise ValueError(f"nms: {len(b)} boxes but {len(s)} scores")
    limit = len(b) if max_detections is None else max(int(max_detections), 0)
    order = np.argsort(-s, kind="stable")
    keep: list[int] = []
    while order.size and len(keep) < limit:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        if not rest.size:
            break
        order = rest[box_iou(b[i], b[rest]) <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def batched_nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    class_ids: np.ndarray,
    iou_threshold: float,
    max_detections: int | None = None,
) -> np.ndarray:
    """Per-class NMS: boxes of different classes never suppress each other."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    c = np.asarray(class_ids).reshape(-1)
    if len(b) != len(c):
        raise ValueError(f"batched_nms: {len(b)} boxes but {len(c)} class ids")
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    # Offset trick: shift each class into its own disjoint coordinate range, then one plain NMS.
    # float64 keeps the shifted coordinates exact for thousands of classes.
    span = float(b.max() - b.min()) + 1.0
    shifted = b + (c.astype(np.float64) - float(c.min()))[:, None] * span
    return nms(shifted, scores, iou_threshold, max_detections)
