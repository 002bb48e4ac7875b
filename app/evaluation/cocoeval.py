"""COCO metrics by faster-coco-eval: pycocotools' COCOeval with its per-image matching and
accumulation in C++ (the same figures; tests/integration/test_cli_evaluate.py checks them
against pycocotools itself). Nothing here matches detections by hand.

Two evaluations of the same documents: the standard one (10 IoU thresholds, 4 area ranges,
1/10/100 detections; keypoints: OKS, 20 detections) for the summary, per-class AP and the
PR curves; and one at IoU 0.5 over all areas whose matches say which detection found which
object (for the operating points). The second is faster-coco-eval's C++ evaluation called
on what the first prepared (documents and IoUs): its module `faster_eval_api_cpp` is the
one private name used, pinned by pyproject (<2) and checked by the tests (its matches are
pycocotools' evalImgs' dtMatches at IoU 0.5).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import faster_coco_eval.faster_eval_api_cpp as _C
import numpy as np
from faster_coco_eval import COCO, COCOeval_faster

from app.evaluation.iou_type import IOU_TYPES, IouType

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
    iou_type: IouType
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
    # Not copied (copies cost ~10% of an evaluation): COCO and COCOeval write into the
    # annotations (ids, areas, ignore flags, a box's polygon), each time the same values.
    gt = COCO(
        {
            "images": gt_doc["images"],
            "categories": gt_doc["categories"],
            "annotations": gt_doc["annotations"],
        },
        print_function=_quiet,
    )
    dt = gt.loadRes(list(dt_anns))
    return gt, dt


def _evaluator(
    gt: Any, dt: Any, iou_type: IouType, sigmas: Sequence[float] | None, use_cats: bool = True
) -> Any:
    e = COCOeval_faster(
        gt,
        dt,
        iou_type.value,
        print_function=_quiet,
        kpt_oks_sigmas=list(sigmas) if sigmas is not None else None,
    )
    e.params.useCats = int(use_cats)
    return e


def run_cocoeval(
    gt_doc: dict[str, Any],
    dt_anns: Sequence[dict[str, Any]],
    iou_type: IouType = IouType.BBOX,
    sigmas: Sequence[float] | None = None,
) -> CocoResult:
    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou type must be one of {', '.join(IOU_TYPES)}, not {iou_type!r}")
    iou_type = IouType(iou_type)  # compared by identity below: a caller's plain string too
    gt, dt = _documents(gt_doc, dt_anns)
    full = _evaluator(gt, dt, iou_type, sigmas)
    full.evaluate()
    full.accumulate()
    full.summarize()
    names = KEYPOINT_STATS if iou_type is IouType.KEYPOINTS else BOX_STATS
    stats = {name: (float(v) if v > -1 else None) for name, v in zip(names, full.stats, strict=False)}
    max_dets = int(full.params.maxDets[-1])
    matched = _matches_again(full, max_dets)
    return CocoResult(
        iou_type,
        stats,
        np.asarray(full.eval["precision"]),
        np.asarray(full.params.recThrs),
        matched,
        max_dets,
    )


def _operating_params(params: Any, max_dets: int) -> Any:
    p = copy.deepcopy(params)
    p.iouThrs = np.array([OPERATING_IOU])
    p.areaRng = [[0.0, 1e5**2]]
    p.areaRngLbl = ["all"]
    p.maxDets = [max_dets]
    return p


def _pairs(result: dict[str, Any]) -> dict[int, int]:
    matched: dict[int, int] = {}
    for key in result["matched"]:
        dt_id, gt_id = key.split("_", 1)
        matched[int(dt_id)] = int(gt_id)
    return matched


def _matches_again(full: Any, max_dets: int) -> dict[int, int]:
    """The matches at IoU 0.5 over all areas, by faster-coco-eval's own C++ evaluation run on
    the documents and IoUs the full evaluation prepared (what its evaluate() does after
    preparing; preparing again would cost as much as the matching itself)."""
    p = _operating_params(full._paramsEval, max_dets)
    categories = p.catIds if p.useCats else [-1]
    ious = [[full.ious[image, category] for category in categories] for image in p.imgIds]
    result = _C.COCOevalEvaluateAccumulate(
        p, ious, full.gt_dataset, full.dt_dataset, p.imgIds, p.catIds, bool(p.useCats)
    )
    return _pairs(result)


def _matches(
    gt: Any, dt: Any, iou_type: IouType, sigmas: Sequence[float] | None, max_dets: int, use_cats: bool
) -> dict[int, int]:
    e = _evaluator(gt, dt, iou_type, sigmas, use_cats)
    e.params = _operating_params(e.params, max_dets)
    e.evaluate()
    e.accumulate()
    return _pairs(e.eval)


def match_across_classes(
    gt_doc: dict[str, Any],
    dt_anns: Sequence[dict[str, Any]],
    iou_type: IouType = IouType.BBOX,
    sigmas: Sequence[float] | None = None,
    max_dets: int = 100,
) -> dict[int, int]:
    """COCOeval's matching at IoU 0.5 with classes ignored (useCats 0): detection index ->
    object index (0-based, in the given lists' order). The confusion matrix's second stage."""
    if not gt_doc["annotations"] or not dt_anns:
        return {}
    # Copies (a few leftovers): the same detections' ids must not change under the caller, and
    # only the images that have leftovers are looked at.
    gt_anns = [dict(a) for a in gt_doc["annotations"]]
    dt_copies = [dict(a) for a in dt_anns]
    used = {a["image_id"] for a in gt_anns} | {a["image_id"] for a in dt_copies}
    images = [image for image in gt_doc["images"] if image["id"] in used]
    gt, dt = _documents({**gt_doc, "images": images, "annotations": gt_anns}, dt_copies)
    matched = _matches(gt, dt, iou_type, sigmas, max_dets, use_cats=False)
    ids = [a["id"] for a in gt_doc["annotations"]]
    position = {ann_id: i for i, ann_id in enumerate(ids)}
    return {dt_id - 1: position[gt_id] for dt_id, gt_id in matched.items() if gt_id in position}
