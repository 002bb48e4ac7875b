"""End-to-end (NMS-free) exports: YOLOv10 and YOLO26 with `nms=False` answer `[N, K, 6 + E]`
rows (x1, y1, x2, y2 in model-input pixels, score, class id, then E extra values: 51 keypoint
values for COCO pose, one angle for OBB where the first four are cx, cy, w, h, 32 mask
coefficients for segment), already the model's top-K, best first.

Decoded as Ultralytics' `non_max_suppression(..., end2end=True)` does: rows whose score is
above the threshold (strictly), in the model's order, the first `max_detections`; no NMS.
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.decoders import Decoded, class_ids, drop_batch


def end2end_rows(output: np.ndarray, min_values: int = 6) -> np.ndarray:
    """The [K, 6 + E] rows of one image (a leading batch dim of 1 removed)."""
    rows = drop_batch("end-to-end output", output, 2)
    if rows.shape[1] < min_values:
        raise ValueError(
            f"end-to-end output {list(np.shape(output))}: rows need {min_values} values "
            "(x1, y1, x2, y2, score, class ...)"
        )
    return rows


def select_end2end(
    rows: np.ndarray, score_threshold: float, max_detections: int
) -> tuple[Decoded, np.ndarray]:
    """The rows kept (indices, in the model's order) and their boxes, scores and classes."""
    scores = rows[:, 4].astype(np.float32)
    kept = np.flatnonzero(scores > score_threshold)[: max(max_detections, 0)]
    decoded = (
        np.ascontiguousarray(rows[kept, :4], dtype=np.float32),
        np.ascontiguousarray(scores[kept]),
        class_ids(rows[kept, 5]),
    )
    return decoded, kept
