"""Greedy non-maximum suppression in numpy (class-agnostic and per-class)."""

from __future__ import annotations

from collections.abc import Callable

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
    return _greedy(s, max_detections, lambda i, rest: box_iou(b[i], b[rest]) > iou_threshold)


Suppresses = Callable[[int, np.ndarray], np.ndarray]


def _greedy(scores: np.ndarray, max_detections: int | None, suppresses: Suppresses) -> np.ndarray:
    """Greedy NMS's loop: the best box left is kept, then the others it `suppresses`
    (a bool per index of `rest`) are dropped; best score first, ties in index order."""
    limit = len(scores) if max_detections is None else max(int(max_detections), 0)
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while order.size and len(keep) < limit:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        if not rest.size:
            break
        order = rest[~suppresses(i, rest)]
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


ULTRALYTICS_MAX_WH = 7680.0  # Ultralytics' (and YOLOv5's) per-class coordinate offset


def ultralytics_nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    class_ids: np.ndarray,
    iou_threshold: float,
    max_detections: int | None = None,
) -> np.ndarray:
    """Per-class NMS computed as Ultralytics' non_max_suppression computes it, in float32:
    each class shifted by class x 7680 px, then one NMS (torchvision's rule, IoU <= threshold
    kept). Float32 at those offsets holds coordinates to 1/32 px for class 38, 1/16 past 68:
    IoUs move by ~1e-4, which on saturated random weights decides which of two boxes near
    the threshold stays. Exact (float64) offsets are `batched_nms`."""
    b = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    s = np.asarray(scores, dtype=np.float32).reshape(-1)
    c = np.asarray(class_ids).reshape(-1)
    if not (len(b) == len(s) == len(c)):
        raise ValueError(f"ultralytics_nms: {len(b)} boxes, {len(s)} scores, {len(c)} class ids")
    shifted = b + (c.astype(np.float32) * np.float32(ULTRALYTICS_MAX_WH))[:, None]
    x1, y1, x2, y2 = (shifted[:, k] for k in range(4))
    areas = (x2 - x1) * (y2 - y1)
    threshold = np.float32(iou_threshold)

    def suppresses(i: int, rest: np.ndarray) -> np.ndarray:
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), np.float32(0))
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), np.float32(0))
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):  # two empty boxes: 0 / 0, kept
            iou = inter / (areas[i] + areas[rest] - inter)
        return iou > threshold

    return _greedy(s, max_detections, suppresses)
