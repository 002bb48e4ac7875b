"""Keypoints of each detection: from a raw YOLOv8/YOLO11 pose output, or from an extra
keypoints output next to EfficientNMS-style detections (e.g. the bundled face detector).

Both return (n, K, 3) float32: x, y where the profile's boxes live, and a score in 0..1
(the model's visibility/confidence; 1.0 when it gives x, y only).
"""

from __future__ import annotations

import numpy as np


def with_scores(points: np.ndarray) -> np.ndarray:
    """(n, K, 2|3) -> (n, K, 3): a missing score column is 1.0."""
    if points.shape[-1] == 3:
        return points.astype(np.float32, copy=False)
    ones = np.ones((*points.shape[:-1], 1), np.float32)
    return np.concatenate([points.astype(np.float32, copy=False), ones], axis=-1)


def yolov8_keypoints(
    rows: np.ndarray, columns: np.ndarray, first_row: int, kpt_shape: tuple[int, int]
) -> np.ndarray:
    """Keypoints of the kept `columns` of a channels-first raw pose output: rows
    `first_row` .. `first_row + K*D` hold x, y[, visibility] of each keypoint in turn."""
    k, d = kpt_shape
    block = rows[first_row : first_row + k * d]
    if block.shape[0] != k * d:
        raise ValueError(
            f"pose output: {rows.shape[0]} channels leave {block.shape[0]} for keypoints, "
            f"kpt_shape {k}x{d} needs {k * d}"
        )
    return with_scores(block[:, columns].T.reshape(-1, k, d))


def keypoints_shape(shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(K, D) told by a keypoints output's own shape [..., M, K, D] (D 2 or 3), else None."""
    if len(shape) >= 3 and shape[-1] in (2, 3) and shape[-2] > 0:
        return int(shape[-2]), int(shape[-1])
    return None


def selected_keypoints(tensor: np.ndarray, rows: np.ndarray, kpt_shape: tuple[int, int] | None) -> np.ndarray:
    """The `rows` (detection slots) of a keypoints output [1, M, K, D], [M, K, D], [1, M, K*D]
    or [M, K*D] (one image per request)."""
    a = np.asarray(tensor)
    shape = kpt_shape or keypoints_shape(a.shape)
    if shape is None:
        raise ValueError(f"keypoints output {list(a.shape)}: give kpt_shape [K, D] in a profile")
    k, d = shape
    if a.size % (k * d):
        raise ValueError(f"keypoints output {list(a.shape)} is not a multiple of kpt_shape {k}x{d}")
    per_slot = a.reshape(-1, k, d)
    if rows.size and int(rows.max()) >= len(per_slot):
        raise ValueError(
            f"keypoints output {list(a.shape)} has {len(per_slot)} slots, detection row {rows.max()}"
        )
    return with_scores(per_slot[rows])
