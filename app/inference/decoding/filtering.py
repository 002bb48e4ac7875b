"""Re-filter detections already received (score threshold + per-class NMS). No Qt here.

Uses the pipeline's own NMS (app.inference.decoding.nms) so moving the sliders back to the
request's thresholds gives exactly what the decoder produced.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.inference.decoding.nms import batched_nms
from app.inference.result import Detection


def refilter(
    detections: Sequence[Detection], score_threshold: float, iou_threshold: float
) -> list[Detection]:
    """Drop detections scoring below `score_threshold`, then per-class greedy NMS.

    A box is suppressed when its IoU with a higher-scoring kept box of the same
    class is strictly greater than `iou_threshold`. The result is sorted by
    descending score (ties keep their input order). The input is not modified.
    """
    kept = [d for d in detections if d.score >= score_threshold]
    if len(kept) < 2:
        return kept  # nothing to suppress (the live preview's one face: no numpy per frame)
    boxes = np.asarray([d.box for d in kept], dtype=np.float64).reshape(-1, 4)
    scores = np.asarray([d.score for d in kept], dtype=np.float64)
    classes = np.asarray([d.class_id for d in kept], dtype=np.int64)
    return [kept[int(i)] for i in batched_nms(boxes, scores, classes, iou_threshold)]
