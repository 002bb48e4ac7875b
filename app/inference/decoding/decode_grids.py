"""Anchor-grid detectors decoded by the app: YOLOX raw outputs and SCRFD/RetinaFace-style
face detectors (insightface's SCRFD exports).

YOLOX `[N, A, 5 + C]` with A = sum over strides 8, 16, 32 of (H/s)(W/s), cells in row-major
order stride by stride: cx = (x + gx) * s, cy = (y + gy) * s, w = exp(w) * s, h = exp(h) * s,
score = objectness x class score (YOLOX's own demo_postprocess + multiclass_nms: best class
per cell, per-class NMS).

SCRFD: per stride s (8, 16, 32) `score_s` [cells * 2, 1], `bbox_s` [cells * 2, 4] (distances
left, top, right, bottom from the cell centre, in strides), `kps_s` [cells * 2, 10] (5 points,
offsets in strides); two anchors per cell share its centre (x * s, y * s). insightface's
SCRFD.detect: score >= threshold, distance2bbox / distance2kps, one NMS over all classes.
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.decoders import Decoded, drop_batch, empty
from app.inference.decoding.nms import batched_nms

STRIDES = (8, 16, 32)


def grid_cells(size: tuple[int, int], strides: tuple[int, ...] = STRIDES) -> tuple[np.ndarray, np.ndarray]:
    """(A, 2) grid x, y of each cell and (A,) its stride, strides in turn, row-major."""
    h, w = size
    grids, steps = [], []
    for s in strides:
        gy, gx = np.meshgrid(np.arange(h // s), np.arange(w // s), indexing="ij")
        grids.append(np.stack([gx, gy], axis=-1).reshape(-1, 2))
        steps.append(np.full(grids[-1].shape[0], s))
    return np.concatenate(grids).astype(np.float32), np.concatenate(steps).astype(np.float32)


def decode_yolox(
    output: np.ndarray,
    size: tuple[int, int],
    score_threshold: float,
    iou_threshold: float,
    max_detections: int = 300,
) -> Decoded:
    """Raw YOLOX `[A, 5 + C]` of a `size` (H, W) input -> boxes in model-input pixels."""
    rows = drop_batch("YOLOX output", output, 2).astype(np.float32)
    grid, stride = grid_cells(size)
    if rows.shape[0] != grid.shape[0] or rows.shape[1] < 6:
        raise ValueError(
            f"YOLOX output {list(np.shape(output))}: expected [{grid.shape[0]}, 5 + classes] "
            f"for a {size[1]}x{size[0]} input (strides {', '.join(map(str, STRIDES))})"
        )
    xy = (rows[:, :2] + grid) * stride[:, None]
    with np.errstate(over="ignore"):
        wh = np.exp(rows[:, 2:4]) * stride[:, None]
    scores_all = rows[:, 4:5] * rows[:, 5:]
    classes = scores_all.argmax(axis=1)
    scores = scores_all[np.arange(len(rows)), classes]
    keep = scores > score_threshold
    if not keep.any():
        return empty()
    boxes = np.concatenate([xy - wh / 2, xy + wh / 2], axis=1)[keep]
    scores, classes = scores[keep], classes[keep]
    kept = batched_nms(boxes, scores, classes, iou_threshold, max_detections)
    return boxes[kept].astype(np.float32), scores[kept].astype(np.float32), classes[kept].astype(np.int64)


def insightface_nms(dets: np.ndarray, threshold: float) -> list[int]:
    """insightface's SCRFD.nms as it is: (n, 5) x1, y1, x2, y2, score rows, areas counted
    pixel-inclusive (+1), ties ordered as its argsort()[::-1] orders them."""
    x1, y1, x2, y2, scores = (dets[:, i] for i in range(5))
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(int(i))
        w = np.maximum(0.0, np.minimum(x2[i], x2[order[1:]]) - np.maximum(x1[i], x1[order[1:]]) + 1)
        h = np.maximum(0.0, np.minimum(y2[i], y2[order[1:]]) - np.maximum(y1[i], y1[order[1:]]) + 1)
        inter = w * h
        overlap = inter / (areas[i] + areas[order[1:]] - inter)
        order = order[np.where(overlap <= threshold)[0] + 1]
    return keep


def decode_scrfd(
    scores: list[np.ndarray],
    distances: list[np.ndarray],
    keypoints: list[np.ndarray] | None,
    size: tuple[int, int],
    score_threshold: float,
    iou_threshold: float,
    max_detections: int = 300,
    det_scale: float = 1.0,
) -> tuple[Decoded, np.ndarray | None]:
    """SCRFD outputs stride by stride (8, 16, 32) -> boxes in model-input pixels (class 0)
    and (n, 5, 2) keypoints (None without kps outputs). As insightface's SCRFD.detect: the
    candidates sorted by score, then its NMS over them in the image's pixels (the input's
    divided by `det_scale`, the letterbox's scale): its +1 areas are not scale-free."""
    all_boxes, all_scores, all_kps = [], [], []
    h, w = size
    for i, s in enumerate(STRIDES):
        cells = (h // s) * (w // s)
        score = np.asarray(scores[i], np.float32).reshape(-1)
        anchors = score.size // cells if cells else 0
        if anchors < 1 or score.size != cells * anchors:
            raise ValueError(
                f"SCRFD stride {s}: {score.size} scores for {cells} cells of a {w}x{h} input "
                "(expected 1 or 2 anchors per cell)"
            )
        gy, gx = np.meshgrid(np.arange(h // s), np.arange(w // s), indexing="ij")
        centres = np.repeat(np.stack([gx, gy], axis=-1).reshape(-1, 2) * s, anchors, axis=0).astype(
            np.float32
        )
        dist = np.asarray(distances[i], np.float32).reshape(-1, 4) * s
        keep = score >= score_threshold
        c, d = centres[keep], dist[keep]
        all_boxes.append(np.concatenate([c - d[:, :2], c + d[:, 2:]], axis=1))
        all_scores.append(score[keep])
        if keypoints is not None:
            k = np.asarray(keypoints[i], np.float32).reshape(len(score), -1, 2)[keep] * s
            all_kps.append(k + c[:, None, :])
    boxes, found = np.concatenate(all_boxes), np.concatenate(all_scores)
    order = found.argsort()[::-1]
    candidates = np.hstack((boxes / det_scale, found[:, None])).astype(np.float32, copy=False)[order]
    kept = order[insightface_nms(candidates, iou_threshold)][:max_detections]
    decoded = (boxes[kept].astype(np.float32), found[kept].astype(np.float32), np.zeros(len(kept), np.int64))
    return decoded, (np.concatenate(all_kps)[kept] if keypoints is not None else None)
