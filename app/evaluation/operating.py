"""Operating points: precision, recall, F1 and the errors per class and per image at any score
threshold, from COCOeval's matches at IoU 0.5 (computed once): what a score slider needs,
without running the model or the matching again.

COCOeval matches greedily in descending score order, so the matches of the detections
scoring at least t are the same whatever the detections below t: keeping the detections at
or above t and counting their matches is exact for every t.

Per class: a detection is a true positive when matched to an object, a false positive when
matched to none, and neither when matched to an ignored object (crowd, VOC difficult, no
labelled keypoint) or beyond the per-image detection limit; an object counts as found at t
when the detection matched to it scores at least t.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

TP, FP, IGNORED = 1, 0, -1


@dataclass(frozen=True)
class ClassPoint:
    """One class at one threshold. None: undefined (no detection kept, or no object)."""

    threshold: float | None  # None: keep no detection (a class whose best F1 is with none)
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else None


@dataclass(frozen=True)
class OperatingPoint:
    """Every class and every image at the thresholds `thresholds` (one per class)."""

    thresholds: np.ndarray  # per class (inf: keep none)
    classes: list[ClassPoint]
    image_tp: np.ndarray  # per image index of the dataset
    image_fp: np.ndarray
    image_fn: np.ndarray
    kept: np.ndarray  # per detection: kept at these thresholds (and evaluated)
    missed: np.ndarray  # per object: not found at these thresholds (ignored objects: False)

    def total(self) -> ClassPoint:
        """Every class together (micro-average: the counts added up)."""
        return ClassPoint(
            None,
            sum(c.tp for c in self.classes),
            sum(c.fp for c in self.classes),
            sum(c.fn for c in self.classes),
        )

    def errors(self) -> np.ndarray:
        """Per image index: false positives plus misses."""
        return self.image_fp + self.image_fn

    def worst_images(self, count: int = 20) -> list[int]:
        """Image indices with the most errors (FP + FN), most first; ties: more misses first."""
        errors = self.image_fp + self.image_fn
        order = np.lexsort((np.arange(errors.size), -self.image_fn, -errors))
        return [int(i) for i in order[:count] if errors[i] > 0]


class OperatingPoints:
    """Built once per evaluation from the detections' and objects' match state."""

    def __init__(
        self,
        categories: Sequence[str],
        images: int,
        det_image: np.ndarray,
        det_category: np.ndarray,
        det_score: np.ndarray,
        det_state: np.ndarray,  # TP, FP or IGNORED
        gt_image: np.ndarray,
        gt_category: np.ndarray,
        gt_found_score: np.ndarray,  # the score of the detection matched to it; -inf: none
        gt_ignored: np.ndarray,
    ) -> None:
        self.categories = list(categories)
        self.images = images
        self.det_image, self.det_category, self.det_score = det_image, det_category, det_score
        self.det_state = det_state
        self.gt_image, self.gt_category = gt_image, gt_category
        self.gt_found_score, self.gt_ignored = gt_found_score, gt_ignored
        k = len(self.categories)
        self.gt_count = np.bincount(gt_category[~gt_ignored], minlength=k)[:k]

    def thresholds(self, value: float | Sequence[float] | Mapping[str, float] | np.ndarray) -> np.ndarray:
        """One threshold per class from a single value, a sequence, or {class name: value}
        (classes not named keep every detection)."""
        k = len(self.categories)
        if isinstance(value, Mapping):
            return np.array([float(value.get(name, -np.inf)) for name in self.categories])
        if isinstance(value, int | float):
            return np.full(k, float(value))
        out = np.asarray(value, np.float64)
        if out.shape != (k,):
            raise ValueError(f"expected {k} thresholds (one per class), got {out.shape}")
        return out

    def at(self, value: float | Sequence[float] | Mapping[str, float] | np.ndarray) -> OperatingPoint:
        t = self.thresholds(value)
        k = len(self.categories)
        evaluated = self.det_state != IGNORED
        kept = evaluated & (self.det_score >= t[self.det_category]) if self.det_score.size else evaluated
        tp_det = kept & (self.det_state == TP)
        fp_det = kept & (self.det_state == FP)
        real = ~self.gt_ignored
        found = real & (self.gt_found_score >= t[self.gt_category]) if self.gt_category.size else real
        missed = real & ~found
        tp = np.bincount(self.det_category[tp_det], minlength=k)[:k]
        fp = np.bincount(self.det_category[fp_det], minlength=k)[:k]
        fn = np.bincount(self.gt_category[missed], minlength=k)[:k]
        classes = [
            ClassPoint(
                None if np.isinf(t[c]) and t[c] > 0 else float(t[c]), int(tp[c]), int(fp[c]), int(fn[c])
            )
            for c in range(k)
        ]
        n = self.images
        return OperatingPoint(
            t,
            classes,
            np.bincount(self.det_image[tp_det], minlength=n)[:n],
            np.bincount(self.det_image[fp_det], minlength=n)[:n],
            np.bincount(self.gt_image[missed], minlength=n)[:n],
            kept,
            missed,
        )

    def best_f1_thresholds(self) -> np.ndarray:
        """Per class, the threshold with the highest F1 (ties: the highest threshold, i.e. the
        fewest errors); inf (keep none) for a class whose detections are all wrong."""
        out = np.full(len(self.categories), np.inf)
        evaluated = self.det_state != IGNORED
        for c in range(len(self.categories)):
            mine = evaluated & (self.det_category == c)
            scores = self.det_score[mine]
            if not scores.size:
                continue
            order = np.argsort(-scores, kind="stable")
            scores = scores[order]
            tp = np.cumsum(self.det_state[mine][order] == TP)
            kept = np.arange(1, scores.size + 1)
            # Only cut between different scores: a threshold keeps all of a tie or none of it.
            ends = np.flatnonzero(np.r_[scores[1:] < scores[:-1], True])
            f1 = 2 * tp[ends] / (kept[ends] + self.gt_count[c])
            best = int(np.argmax(f1))
            if f1[best] > 0:
                out[c] = scores[ends[best]]
        return out


def det_states(
    det_ids: np.ndarray,
    det_image: np.ndarray,
    det_category: np.ndarray,
    det_score: np.ndarray,
    matched: Mapping[int, int],
    gt_ignored_by_id: Mapping[int, bool],
    max_detections: int,
) -> np.ndarray:
    """TP / FP / IGNORED per detection from COCOeval's matches (detection id -> object id)."""
    state = np.full(det_ids.size, FP, np.int8)
    for i, det_id in enumerate(det_ids.tolist()):
        gt_id = matched.get(det_id)
        if gt_id is not None:
            state[i] = IGNORED if gt_ignored_by_id.get(gt_id, False) else TP
    if det_ids.size:
        # COCOeval keeps the `max_detections` best of each image and class (stable order).
        order = np.lexsort((np.arange(det_ids.size), -det_score, det_category, det_image))
        group = np.stack([det_image[order], det_category[order]], axis=1)
        starts = np.r_[True, (group[1:] != group[:-1]).any(axis=1)]
        first = np.maximum.accumulate(np.where(starts, np.arange(order.size), 0))
        rank = np.empty(order.size, np.int64)
        rank[order] = np.arange(order.size) - first
        state[rank >= max_detections] = IGNORED
    return state
