"""The confusion matrix at IoU 0.5 and an operating point, with a background row and column.

Rows are what the objects are, columns what the model said: `matrix[i][j]` objects of class
i detected as class j; the last row (background) counts detections where there is no object
(false detections), the last column objects nothing found (missed). Built in two stages,
both COCOeval's matching: the diagonal is each class's true positives (the per-class
figures, so the two always agree); then the leftovers, detections kept but wrong and
objects missed, are matched again with classes ignored: a pair is a confusion, what stays
unmatched is background.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.evaluation.cocoeval import OPERATING_IOU, match_across_classes
from app.evaluation.iou_type import IouType
from app.evaluation.operating import TP, OperatingPoint

BACKGROUND = "background"


@dataclass
class ConfusionMatrix:
    labels: list[str]  # the classes, then "background"
    matrix: np.ndarray  # [K + 1, K + 1] ints, rows: truth, columns: prediction
    thresholds: np.ndarray  # the score threshold of each class
    iou: float = OPERATING_IOU
    # (row, column) -> the image indices that contribute to that cell (to filter thumbnails)
    images: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return {
            "labels": self.labels,
            "matrix": self.matrix.tolist(),
            "iou": self.iou,
            "score": {
                name: (round(float(t), 6) if np.isfinite(t) else None)
                for name, t in zip(self.labels[:-1], self.thresholds, strict=True)
            },
            "rows": "ground truth (last: background = false detections)",
            "columns": "prediction (last: background = missed objects)",
        }


def confusion_matrix(
    categories: Sequence[str],
    point: OperatingPoint,
    det_state: np.ndarray,
    det_image: np.ndarray,
    det_category: np.ndarray,
    dt_anns: Sequence[dict[str, Any]],
    gt_doc: dict[str, Any],
    gt_image: np.ndarray,
    gt_category: np.ndarray,
    iou_type: IouType,
    sigmas: Sequence[float] | None,
    max_detections: int,
) -> ConfusionMatrix:
    k = len(categories)
    matrix = np.zeros((k + 1, k + 1), np.int64)
    cells: dict[tuple[int, int], set[int]] = defaultdict(set)
    hits = point.kept & (det_state == TP)
    for c, image in zip(det_category[hits].tolist(), det_image[hits].tolist(), strict=True):
        matrix[c, c] += 1
        cells[c, c].add(image)
    wrong = np.flatnonzero(point.kept & (det_state != TP))
    missed = np.flatnonzero(point.missed)
    leftover_gt = {**gt_doc, "annotations": [gt_doc["annotations"][i] for i in missed.tolist()]}
    leftover_dt = [dt_anns[i] for i in wrong.tolist()]
    pairs = match_across_classes(leftover_gt, leftover_dt, iou_type, sigmas, max_detections)
    matched_gt = set(pairs.values())
    for d, det in enumerate(wrong.tolist()):
        column, image = int(det_category[det]), int(det_image[det])
        g = pairs.get(d)
        row = int(gt_category[missed[g]]) if g is not None else k
        matrix[row, column] += 1
        cells[row, column].add(image)
    for g, obj in enumerate(missed.tolist()):
        if g not in matched_gt:
            row, image = int(gt_category[obj]), int(gt_image[obj])
            matrix[row, k] += 1
            cells[row, k].add(image)
    return ConfusionMatrix(
        [*categories, BACKGROUND],
        matrix,
        point.thresholds,
        images={cell: sorted(found) for cell, found in cells.items()},
    )
