"""Results + dataset -> `Evaluation`: the COCO metrics, per-class AP, the operating points,
the confusion matrix and the worst images, for the images the model answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.evaluation.classes import ClassMatch, match_classes
from app.evaluation.cocoeval import CocoResult, run_cocoeval
from app.evaluation.confusion import ConfusionMatrix, confusion_matrix
from app.evaluation.datasets.model import Dataset, DatasetError
from app.evaluation.detections import Detections, build_detections
from app.evaluation.ground_truth import GroundTruth, build_ground_truth
from app.evaluation.iou_type import IouType
from app.evaluation.operating import TP, OperatingPoint, OperatingPoints, det_states
from app.evaluation.sigmas import oks_sigmas
from app.inference.result import InferenceResult

Thresholds = float | Sequence[float] | Mapping[str, float] | np.ndarray


@dataclass
class Evaluation:
    dataset: Dataset
    iou_type: IouType
    classes: ClassMatch
    ground_truth: GroundTruth
    detections: Detections
    coco: CocoResult | None  # None: no image was evaluated
    points: OperatingPoints
    det_state: np.ndarray
    best_thresholds: np.ndarray  # per class, the F1-maximising score threshold (inf: keep none)
    evaluated: list[int]  # image indices the model answered
    failed: list[InferenceResult] = field(default_factory=list)  # images the model did not answer
    sigmas: list[float] | None = None  # OKS sigmas (keypoints)

    def operating_point(self, thresholds: Thresholds | None = None) -> OperatingPoint:
        """P/R/F1 and errors at `thresholds` (default: each class's best F1)."""
        return self.points.at(self.best_thresholds if thresholds is None else thresholds)

    def confusion(self, thresholds: Thresholds | None = None) -> ConfusionMatrix:
        point = self.operating_point(thresholds)
        gt = self.ground_truth
        return confusion_matrix(
            self.classes.categories,
            point,
            self.det_state,
            self.detections.image,
            self.detections.category,
            self.detections.anns,
            gt.doc,
            gt.ann_image,
            gt.ann_category,
            self.iou_type,
            self.sigmas,
            self.coco.max_detections if self.coco else 100,
        )


def evaluate_results(
    dataset: Dataset,
    results: Mapping[int, InferenceResult],
    model_labels: Sequence[str],
    *,
    class_map: Mapping[str, str] | None = None,
    iou_type: IouType = IouType.BBOX,
    keypoint_names: Sequence[str] = (),
    keypoint_count: int | None = None,
) -> Evaluation:
    """`results`: dataset image index -> the model's result for it (failed ones are reported
    and left out). DatasetError when no dataset class names a model class."""
    iou_type = IouType(iou_type)  # compared by identity below: a caller's plain string too
    classes = match_classes(dataset.class_names, model_labels, class_map)
    if not classes.categories:
        raise DatasetError(
            f"{dataset.path}: no class of the dataset ({', '.join(dataset.class_names[:10]) or 'none'}) "
            f"names a class of the model ({', '.join(list(model_labels)[:10]) or 'none'}); "
            "rename them with --class-map"
        )
    answered = {i: r for i, r in results.items() if r.ok and r.width and r.height}
    failed = [r for i, r in sorted(results.items()) if i not in answered]
    sizes = {i: (int(r.width or 0), int(r.height or 0)) for i, r in answered.items()}
    if iou_type is IouType.KEYPOINTS and keypoint_count is None:
        keypoint_count = len(keypoint_names) or _keypoints_of(answered)
    gt = build_ground_truth(dataset, classes, sizes, iou_type, keypoint_count, keypoint_names)
    dets = build_detections(answered, classes, iou_type)
    sigmas = oks_sigmas(keypoint_names, keypoint_count or 0) if iou_type is IouType.KEYPOINTS else None
    coco = run_cocoeval(gt.doc, dets.anns, iou_type, sigmas) if answered else None
    matched = coco.matched if coco else {}
    ignored_by_id = {i + 1: bool(v) for i, v in enumerate(gt.ann_ignored.tolist())}
    det_ids = np.arange(1, len(dets.anns) + 1)
    max_dets = coco.max_detections if coco else 100
    state = det_states(det_ids, dets.image, dets.category, dets.score, matched, ignored_by_id, max_dets)
    found = np.full(len(gt.doc["annotations"]), -np.inf)
    for det_id, gt_id in matched.items():
        if state[det_id - 1] == TP:
            found[gt_id - 1] = dets.score[det_id - 1]
    points = OperatingPoints(
        classes.categories,
        len(dataset.images),
        dets.image,
        dets.category,
        dets.score,
        state,
        gt.ann_image,
        gt.ann_category,
        found,
        gt.ann_ignored,
    )
    return Evaluation(
        dataset,
        iou_type,
        classes,
        gt,
        dets,
        coco,
        points,
        state,
        points.best_f1_thresholds(),
        sorted(answered),
        failed,
        sigmas,
    )


def iou_type_problem(
    iou_type: IouType, model: str, task: str, kpt_shape: tuple[int, int] | None
) -> str | None:
    """Why `model` cannot be evaluated with `iou_type` (None: it can)."""
    iou_type = IouType(iou_type)
    if iou_type is IouType.SEGM and task not in ("segment", "semantic"):
        return f"model '{model}' gives no masks (its task is {task})"
    if iou_type is IouType.KEYPOINTS and kpt_shape is None:
        return f"model '{model}' gives no keypoints (its task is {task})"
    return None


def _keypoints_of(results: Mapping[int, InferenceResult]) -> int | None:
    for result in results.values():
        for det in result.detections:
            if det.keypoints:
                return len(det.keypoints)
    return None
