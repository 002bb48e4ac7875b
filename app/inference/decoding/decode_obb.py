"""Oriented boxes (Ultralytics' OBB task): cx, cy, w, h and an angle in radians (rotation of
the box's width axis from the image's x axis, clockwise on screen as y points down).

Raw YOLOv8/YOLO11-OBB exports answer `[N, 4 + C + 1, A]` (cx, cy, w, h in model-input
pixels, C class scores, the angle). Decoded as Ultralytics' `non_max_suppression(...,
rotated=True)` does: the best class per candidate above the score, then Fast-NMS over the
probabilistic IoU of the boxes (`batch_probiou`: each box as a Gaussian), boxes of other
classes offset out of reach, the first `max_detections` kept.
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.decoders import Decoded, empty

MAX_WH = 7680.0  # Ultralytics' per-class offset
MAX_NMS = 30000  # candidates NMS looks at (best scores), as Ultralytics


def _covariance(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = boxes[:, 2] ** 2 / 12
    b = boxes[:, 3] ** 2 / 12
    cos, sin = np.cos(boxes[:, 4]), np.sin(boxes[:, 4])
    return a * cos**2 + b * sin**2, a * sin**2 + b * cos**2, (a - b) * cos * sin


def probiou(obb1: np.ndarray, obb2: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """(N, 5) x (M, 5) xywhr -> (N, M) probabilistic IoU (Ultralytics' batch_probiou)."""
    x1, y1 = obb1[:, 0:1], obb1[:, 1:2]
    x2, y2 = obb2[None, :, 0], obb2[None, :, 1]
    a1, b1, c1 = (v[:, None] for v in _covariance(obb1))
    a2, b2, c2 = (v[None, :] for v in _covariance(obb2))
    denominator = (a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + eps
    t1 = ((a1 + a2) * (y1 - y2) ** 2 + (b1 + b2) * (x1 - x2) ** 2) / denominator * 0.25
    t2 = ((c1 + c2) * (x2 - x1) * (y1 - y2)) / denominator * 0.5
    det1 = np.clip(a1 * b1 - c1**2, 0, None)
    det2 = np.clip(a2 * b2 - c2**2, 0, None)
    t3 = np.log(((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2) / (4 * np.sqrt(det1 * det2) + eps) + eps) * 0.5
    bd = np.clip(t1 + t2 + t3, eps, 100.0)
    return 1 - np.sqrt(1.0 - np.exp(-bd) + eps)


def fast_nms_rotated(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept, best first: a box goes when any better-scoring box (kept or not, as
    Ultralytics' Fast-NMS) overlaps it by more than `iou_threshold`."""
    if not len(boxes):
        return np.zeros(0, np.int64)
    order = np.argsort(-scores, kind="stable")
    ious = np.triu(probiou(boxes[order], boxes[order]), k=1)
    return order[(ious > iou_threshold).sum(axis=0) <= 0].astype(np.int64)


def select_obb(
    rows: np.ndarray, num_classes: int, score_threshold: float, iou_threshold: float, max_detections: int
) -> tuple[Decoded, np.ndarray]:
    """Channels-first [4 + C + 1, A] -> (xywhr (n, 5), scores, classes) packed as Decoded with
    the boxes as xywhr, and the candidate columns kept."""
    cls = rows[4 : 4 + num_classes].astype(np.float32)
    best = cls.max(axis=0)
    idx = np.flatnonzero(best > score_threshold)
    if not idx.size:
        return (np.zeros((0, 5), np.float32), *empty()[1:]), np.zeros(0, np.int64)
    idx = idx[np.argsort(-best[idx], kind="stable")[:MAX_NMS]]
    classes = cls[:, idx].argmax(axis=0).astype(np.int64)
    scores = best[idx]
    xywhr = np.concatenate([rows[:4, idx].T, rows[-1:, idx].T], axis=1).astype(np.float32)
    shifted = xywhr.astype(np.float64).copy()
    shifted[:, :2] += classes[:, None] * MAX_WH
    keep = fast_nms_rotated(shifted, scores.astype(np.float64), iou_threshold)[: max(max_detections, 0)]
    return (xywhr[keep], scores[keep], classes[keep]), idx[keep]


def corners(xywhr: np.ndarray) -> np.ndarray:
    """(N, 5) xywhr -> (N, 4, 2) corners, in Ultralytics' order (xywhr2xyxyxyxy)."""
    ctr = xywhr[:, None, 0:2]
    cos, sin = np.cos(xywhr[:, 4]), np.sin(xywhr[:, 4])
    half_w, half_h = xywhr[:, 2] / 2, xywhr[:, 3] / 2
    vec1 = np.stack([half_w * cos, half_w * sin], axis=-1)[:, None]
    vec2 = np.stack([-half_h * sin, half_h * cos], axis=-1)[:, None]
    return np.concatenate(
        [ctr + vec1 + vec2, ctr + vec1 - vec2, ctr - vec1 - vec2, ctr - vec1 + vec2], axis=1
    )


def obb_to_original(xywhr: np.ndarray, affine: tuple[float, float, float, float]) -> np.ndarray:
    """xywhr in model-input pixels -> original pixels: the centre through the transform, the
    sides divided by each axis' scale, the angle kept (Ultralytics' scale_boxes(xywh=True))."""
    sx, sy, tx, ty = affine
    out = np.array(xywhr, dtype=np.float32).reshape(-1, 5)
    out[:, 0] = (out[:, 0] - tx) / sx
    out[:, 1] = (out[:, 1] - ty) / sy
    out[:, 2] /= sx
    out[:, 3] /= sy
    return out
