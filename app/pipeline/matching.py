"""Which results of two models on the same image agree: matching per class by IoU.

Detections are matched per class, greedily by descending IoU (the pair that overlaps most
first, each detection at most once), a pair counting when its IoU is >= the threshold.
The IoU is the masks' when both detections have one (instance segmentation), else the
boxes'. Keypoints travel with their detection. Semantic segmentations are matched per
class by mask IoU; classifiers by their top-1 class. No Qt, no I/O: the command line and
the viewer share it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.inference.masks import BinaryMask
from app.inference.result import Detection, InferenceResult

DEFAULT_IOU = 0.5


class MatchKind(enum.StrEnum):
    """What the indices of a Match point into."""

    DETECTIONS = "detections"  # InferenceResult.detections
    MASKS = "masks"  # InferenceResult.masks (semantic, one per class)
    CLASSES = "classes"  # InferenceResult.classes: index 0, the top-1 class


@dataclass(frozen=True)
class Match:
    """Pairs (index in A, index in B, IoU) and what only one side has, indices ascending."""

    matched: list[tuple[int, int, float]] = field(default_factory=list)
    only_a: list[int] = field(default_factory=list)
    only_b: list[int] = field(default_factory=list)
    kind: MatchKind = MatchKind.DETECTIONS

    @property
    def union(self) -> int:
        return len(self.matched) + len(self.only_a) + len(self.only_b)

    @property
    def agreement(self) -> float:
        """matched / union; 1.0 when neither side found anything (they agree on nothing there)."""
        return len(self.matched) / self.union if self.union else 1.0

    def to_record(self) -> dict[str, Any]:
        return {
            "matched": [[i, j, round(iou, 4)] for i, j, iou in self.matched],
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
        }


def box_iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of `a` (N, 4) with every box of `b` (M, 4), x1 y1 x2 y2: (N, M)."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    ix1 = np.maximum(a[:, None, 0], b[None, :, 0])
    iy1 = np.maximum(a[:, None, 1], b[None, :, 1])
    ix2 = np.minimum(a[:, None, 2], b[None, :, 2])
    iy2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


class _Crops:
    """Unpacked mask crops, each made once per matching (unpacking costs more than counting)."""

    def __init__(self) -> None:
        self._cache: dict[int, np.ndarray] = {}

    def get(self, mask: BinaryMask) -> np.ndarray:
        key = id(mask)
        if key not in self._cache:
            self._cache[key] = mask.crop()
        return self._cache[key]


def mask_iou(a: BinaryMask, b: BinaryMask, crops: _Crops | None = None) -> float:
    """IoU of two masks of the same image, counted on the overlap of their regions only."""
    union_area = a.area + b.area
    if union_area == 0:
        return 0.0
    ax1, ay1, ax2, ay2 = a.bbox()
    bx1, by1, bx2, by2 = b.bbox()
    x1, y1, x2, y2 = max(ax1, bx1), max(ay1, by1), min(ax2, bx2), min(ay2, by2)
    inter = 0
    if x2 > x1 and y2 > y1:
        crops = crops or _Crops()
        ca = crops.get(a)[y1 - ay1 : y2 - ay1, x1 - ax1 : x2 - ax1]
        cb = crops.get(b)[y1 - by1 : y2 - by1, x1 - bx1 : x2 - bx1]
        inter = int(np.count_nonzero(ca & cb))
    return inter / (union_area - inter)


def _greedy(iou: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """Pairs (row, column, iou), best first, each row and column used once, iou >= threshold."""
    rows, cols = np.nonzero(iou >= threshold)
    if not rows.size:
        return []
    values = iou[rows, cols]
    # Best IoU first; ties broken by position so the result never depends on sort stability.
    order = np.lexsort((cols, rows, -values))
    used_r: set[int] = set()
    used_c: set[int] = set()
    pairs = []
    for k in order:
        r, c = int(rows[k]), int(cols[k])
        if r in used_r or c in used_c:
            continue
        used_r.add(r)
        used_c.add(c)
        pairs.append((r, c, float(values[k])))
    return pairs


def match_detections(
    a: Sequence[Detection], b: Sequence[Detection], iou_threshold: float = DEFAULT_IOU
) -> Match:
    """Match two detection lists per class (mask IoU where both have masks, else box IoU)."""
    matched: list[tuple[int, int, float]] = []
    classes = {d.class_id for d in a} | {d.class_id for d in b}
    crops = _Crops()
    for class_id in sorted(classes):
        ia = [i for i, d in enumerate(a) if d.class_id == class_id]
        ib = [j for j, d in enumerate(b) if d.class_id == class_id]
        if not ia or not ib:
            continue
        iou = box_iou_matrix(np.array([a[i].box for i in ia]), np.array([b[j].box for j in ib]))
        for r, c in zip(*np.nonzero(iou > 0), strict=True):
            ma, mb = a[ia[r]].mask, b[ib[c]].mask
            if ma is not None and mb is not None:
                iou[r, c] = mask_iou(ma, mb, crops)
        matched += [(ia[r], ib[c], v) for r, c, v in _greedy(iou, iou_threshold)]
    matched.sort()
    return _with_leftovers(matched, len(a), len(b), MatchKind.DETECTIONS)


def _with_leftovers(matched: list[tuple[int, int, float]], n_a: int, n_b: int, kind: MatchKind) -> Match:
    in_a = {i for i, _, _ in matched}
    in_b = {j for _, j, _ in matched}
    return Match(
        matched,
        [i for i in range(n_a) if i not in in_a],
        [j for j in range(n_b) if j not in in_b],
        kind,
    )


def match_results(a: InferenceResult, b: InferenceResult, iou_threshold: float = DEFAULT_IOU) -> Match | None:
    """The Match of two results of the same input; None unless both are ok.

    What is compared follows what the models give: detections when either has some (or
    neither gives anything else), else the semantic masks per class, else the top-1 class.
    """
    if not (a.ok and b.ok):
        return None
    if a.detections or b.detections or (a.masks is None and b.masks is None and not (a.classes or b.classes)):
        return match_detections(a.detections, b.detections, iou_threshold)
    if a.masks is not None or b.masks is not None:
        ma, mb = a.masks or [], b.masks or []
        crops = _Crops()
        pairs = []
        for i, x in enumerate(ma):
            for j, y in enumerate(mb):
                if x.class_id == y.class_id:
                    iou = mask_iou(x.mask, y.mask, crops)
                    if iou >= iou_threshold:
                        pairs.append((i, j, iou))
        return _with_leftovers(pairs, len(ma), len(mb), MatchKind.MASKS)
    top_a, top_b = (a.classes or [])[:1], (b.classes or [])[:1]
    same = bool(top_a and top_b and top_a[0].class_id == top_b[0].class_id)
    return _with_leftovers([(0, 0, 1.0)] if same else [], len(top_a), len(top_b), MatchKind.CLASSES)
