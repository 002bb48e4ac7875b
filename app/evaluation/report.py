"""The evaluation report as JSON: one object per model (and with two, both under "a" and "b"
with the per-class AP difference). Strict JSON: a figure that is undefined (pycocotools'
-1, a precision with nothing kept, NaN) is null, never NaN or Infinity."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from app.evaluation.cocoeval import BOX_STATS, KEYPOINT_STATS
from app.evaluation.datasets.model import CLIPPED, DUPLICATE_ID, OUTSIDE_PATH, Problem
from app.evaluation.evaluate import Evaluation
from app.evaluation.iou_type import IouType
from app.inference.result import finite, strict_json

WORST_IMAGES = 20
PROBLEMS_LISTED = 100
METRIC_KEYS = ("map", "map50", "map75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100")


def dumps(report: dict[str, Any]) -> str:
    """The report as strict JSON text (allow_nan=False: a NaN that slipped through fails here)."""
    return strict_json(report, indent=2, ensure_ascii=False) + "\n"


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def all_problems(evaluation: Evaluation) -> list[Problem]:
    return evaluation.dataset.problems + evaluation.ground_truth.problems


def dataset_record(evaluation: Evaluation) -> dict[str, Any]:
    dataset = evaluation.dataset
    problems = all_problems(evaluation)
    dropped = [p for p in problems if p.dropped or p.image_dropped]
    by_kind = Counter[str]()
    for p in dropped:
        by_kind[p.kind] += p.dropped
    record: dict[str, Any] = {
        "path": dataset.path,
        "format": dataset.format,
        "images": len(dataset.images),
        "evaluated_images": len(evaluation.evaluated),
        "annotations": len(evaluation.ground_truth.doc["annotations"]),
        "classes": list(evaluation.classes.categories),
        "unmatched_classes": evaluation.classes.unmatched_dataset,
        "model_classes_not_in_dataset": evaluation.classes.model_only,
        "dropped": {
            "annotations": sum(p.dropped for p in dropped),
            "images": sum(1 for p in dropped if p.image_dropped),
            "by_reason": dict(by_kind),
            "clipped_boxes": sum(1 for p in problems if p.kind == CLIPPED),
            "outside_paths": sum(1 for p in problems if p.kind == OUTSIDE_PATH),
            "duplicate_image_ids": sum(1 for p in problems if p.kind == DUPLICATE_ID),
            "problems": [p.to_record() for p in problems[:PROBLEMS_LISTED]],
            "more_problems": max(len(problems) - PROBLEMS_LISTED, 0),
        },
        "failed_images": [
            {"source": r.source, "status": r.status.value, "error": r.error} for r in evaluation.failed
        ],
        "detections": {
            "evaluated": len(evaluation.detections.anns),
            "not_in_dataset_classes": evaluation.detections.not_in_dataset,
            "without_what_the_iou_type_needs": evaluation.detections.unusable,
        },
    }
    if evaluation.sigmas is not None:
        record["oks_sigmas"] = evaluation.sigmas
    return record


def metrics_record(evaluation: Evaluation) -> dict[str, float | None]:
    stats = evaluation.coco.stats if evaluation.coco else {}
    names = KEYPOINT_STATS if evaluation.iou_type is IouType.KEYPOINTS else BOX_STATS
    keys = list(METRIC_KEYS) + [n for n in names if n not in METRIC_KEYS]
    return {key: _round(stats.get(key)) for key in keys}


def per_class_records(evaluation: Evaluation) -> list[dict[str, Any]]:
    point = evaluation.operating_point()
    rows = []
    for k, name in enumerate(evaluation.classes.categories):
        ap, ap50 = evaluation.coco.class_ap(k) if evaluation.coco else (None, None)
        c = point.classes[k]
        rows.append(
            {
                "class": name,
                "ap": _round(ap),
                "ap50": _round(ap50),
                "gt": int(evaluation.points.gt_count[k]),
                "precision": _round(c.precision),
                "recall": _round(c.recall),
                "f1": _round(c.f1),
                "score_threshold": _round(c.threshold),
                "tp": c.tp,
                "fp": c.fp,
                "fn": c.fn,
            }
        )
    return rows


def worst_images_record(evaluation: Evaluation, count: int = WORST_IMAGES) -> list[dict[str, Any]]:
    point = evaluation.operating_point()
    images = evaluation.dataset.images
    return [
        {
            "source": str(images[i].path),
            "name": images[i].name,
            "tp": int(point.image_tp[i]),
            "fp": int(point.image_fp[i]),
            "fn": int(point.image_fn[i]),
        }
        for i in point.worst_images(count)
    ]


def model_report(evaluation: Evaluation, model: str, speed: dict[str, Any] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "model": model,
        "iou_type": evaluation.iou_type,
        "dataset": dataset_record(evaluation),
        "metrics": metrics_record(evaluation),
        "per_class": per_class_records(evaluation),
        "confusion_matrix": evaluation.confusion().to_record(),
        "worst_images": worst_images_record(evaluation),
        "speed": speed or {},
    }
    cleaned: dict[str, Any] = finite(report)
    return cleaned


def comparison_report(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two models' reports side by side, with B - A for the metrics and each class's AP."""

    def diff(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else round(y - x, 6)

    b_classes = {row["class"]: row for row in b["per_class"]}
    per_class = []
    for row in a["per_class"]:
        other = b_classes.get(row["class"], {})
        per_class.append(
            {
                "class": row["class"],
                "ap_a": row["ap"],
                "ap_b": other.get("ap"),
                "ap_difference": diff(row["ap"], other.get("ap")),
                "ap50_a": row["ap50"],
                "ap50_b": other.get("ap50"),
                "ap50_difference": diff(row["ap50"], other.get("ap50")),
            }
        )
    metrics = {key: diff(a["metrics"].get(key), b["metrics"].get(key)) for key in a["metrics"]}
    return {"a": a, "b": b, "difference": {"metrics": metrics, "per_class": per_class, "sign": "b - a"}}
