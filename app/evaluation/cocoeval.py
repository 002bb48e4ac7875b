"""COCO metrics by faster-coco-eval: pycocotools' COCOeval with its per-image matching and
accumulation in C++ (the same figures; tests/integration/test_cli_evaluate.py checks them
against pycocotools itself). Nothing here matches detections by hand.

Two evaluations of the same documents: the standard one (10 IoU thresholds, 4 area ranges,
1/10/100 detections; keypoints: OKS, 20 detections) for the summary, per-class AP and the
PR curves; and one at IoU 0.5 over all areas whose matches say which detection found which
object (for the operating points). The second reuses the first's IoUs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from faster_coco_eval import COCO, COCOeval_faster

IOU_TYPES = ("bbox", "segm", "keypoints")
OPERATING_IOU = 0.5
# pycocotools' summary lines, in its order (keypoints: no small objects, 20 detections).
BOX_STATS = (
    "map", "map50", "map75", "map_small", "map_medium", "map_large",
    "mar_1", "mar_10", "mar_100", "mar_small", "mar_medium", "mar_large",
)  # fmt: skip
KEYPOINT_STATS = (
    "map", "map50", "map75", "map_medium", "map_large",
    "mar_20", "mar50_20", "mar75_20", "mar_medium", "mar_large",
)  # fmt: skip

log = logging.getLogger(__name__)


def _quiet(*_args: Any, **_kwargs: Any) -> None:
    pass


@dataclass
class CocoResult:
    iou_type: str
    stats: dict[str, float | None]  # pycocotools' summary; None where it says -1 (undefined)
    precision: np.ndarray  # [T, R, K, A, M] as COCOeval accumulates it (-1: no ground truth)
    recall_thresholds: np.ndarray  # R values of the precision array
    matched: dict[int, int]  # detection id -> object id, at IoU 0.5 over all areas
    max_detections: int  # per image and class (100; keypoints 20)

    def class_ap(self, k: int) -> tuple[float | None, float | None]:
        """AP@[.5:.95] and AP@.5 of category k (area all, most detections), None without objects."""
        block = self.precision[:, :, k, 0, -1]
        every, half = block[block > -1], block[0][block[0] > -1]
        return (float(every.mean()) if every.size else None, float(half.mean()) if half.size else None)

    def pr_curve(self, k: int) -> np.ndarray | None:
        """Interpolated precision at each recall threshold, IoU 0.5 (None without objects)."""
        curve = self.precision[0, :, k, 0, -1]
        return None if (curve < 0).all() else np.clip(curve, 0.0, 1.0)


def _documents(gt_doc: dict[str, Any], dt_anns: Sequence[dict[str, Any]]) -> tuple[Any, Any]:
    # Copies of the annotations: COCO and COCOeval write into them (ids, areas, ignore flags).
    gt = COCO(
        {
            "images": gt_doc["images"],
            "categories": gt_doc["categories"],
            "annotations": [dict(a) for a in gt_doc["annotations"]],
        },
        print_function=_quiet,
    )
    dt = gt.loadRes([dict(a) for a in dt_anns])
    return gt, dt


def _evaluator(gt: Any, dt: Any, iou_type: str, sigmas: Sequence[float] | None, use_cats: bool = True) -> Any:
    e = COCOeval_faster(
        gt, dt, iou_type, print_function=_quiet, kpt_oks_sigmas=list(sigmas) if sigmas is not None else None
    )
    e.params.useCats = int(use_cats)
    return e


def run_cocoeval(
    gt_doc: dict[str, Any],
    dt_anns: Sequence[dict[str, Any]],
    iou_type: str = "bbox",
    sigmas: Sequence[float] | None = None,
) -> CocoResult:
    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou type must be one of {', '.join(IOU_TYPES)}, not {iou_type!r}")
    gt, dt = _documents(gt_doc, dt_anns)
    full = _evaluator(gt, dt, iou_type, sigmas)
    full.evaluate()
    full.accumulate()
    full.summarize()
    names = KEYPOINT_STATS if iou_type == "keypoints" else BOX_STATS
    stats = {name: (float(v) if v > -1 else None) for name, v in zip(names, full.stats, strict=False)}
    max_dets = int(full.params.maxDets[-1])
    matched = _matches(gt, dt, iou_type, sigmas, max_dets, ious=full.ious)
    return CocoResult(
        iou_type,
        stats,
        np.asarray(full.eval["precision"]),
        np.asarray(full.params.recThrs),
        matched,
        max_dets,
    )


def _matches(
    gt: Any,
    dt: Any,
    iou_type: str,
    sigmas: Sequence[float] | None,
    max_dets: int,
    *,
    ious: dict[Any, Any] | None = None,
    use_cats: bool = True,
) -> dict[int, int]:
    e = _evaluator(gt, dt, iou_type, sigmas, use_cats)
    e.params.iouThrs = np.array([OPERATING_IOU])
    e.params.areaRng = [[0.0, 1e5**2]]
    e.params.areaRngLbl = ["all"]
    e.params.maxDets = [max_dets]
    if ious is not None:
        cached = ious  # the same pairs, the same IoUs: computed once

        def reuse(image_id: Any, category_id: Any) -> Any:
            return cached[image_id, category_id]

        e.computeIoU = e.computeOks = reuse
    e.evaluate()
    e.accumulate()
    matched: dict[int, int] = {}
    for key in e.eval["matched"]:
        dt_id, gt_id = key.split("_", 1)
        matched[int(dt_id)] = int(gt_id)
    return matched


def match_across_classes(
    gt_doc: dict[str, Any],
    dt_anns: Sequence[dict[str, Any]],
    iou_type: str = "bbox",
    sigmas: Sequence[float] | None = None,
    max_dets: int = 100,
) -> dict[int, int]:
    """COCOeval's matching at IoU 0.5 with classes ignored (useCats 0): detection index ->
    object index (0-based, in the given lists' order). The confusion matrix's second stage."""
    if not gt_doc["annotations"] or not dt_anns:
        return {}
    gt, dt = _documents(gt_doc, dt_anns)
    matched = _matches(gt, dt, iou_type, sigmas, max_dets, use_cats=False)
    ids = [a["id"] for a in gt_doc["annotations"]]
    position = {ann_id: i for i, ann_id in enumerate(ids)}
    return {dt_id - 1: position[gt_id] for dt_id, gt_id in matched.items() if gt_id in position}
