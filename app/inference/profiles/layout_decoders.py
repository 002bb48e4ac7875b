"""Decoders of the export layouts beyond the YOLOv5/v8 raw, EfficientNMS and TF OD ones:
end-to-end YOLOv10/YOLO26 (detect, pose, segment, OBB), raw YOLOv8/11-OBB, YOLOX, the DETR
family, Ultralytics' RT-DETR, torchvision-style and SCRFD. Each returns `RawDetections` in
the profile's box space (see decoding/ for the exporters' rules each one follows)."""

from __future__ import annotations

import numpy as np

from app.inference.decoding.decode_end2end import end2end_rows, select_end2end
from app.inference.decoding.decode_grids import decode_scrfd, decode_yolox
from app.inference.decoding.decode_obb import corners, select_obb
from app.inference.decoding.decode_pose import with_scores
from app.inference.decoding.decode_sets import decode_detr, decode_rtdetr_ultralytics, decode_torchvision
from app.inference.decoding.decoders import Decoded, drop_batch
from app.inference.decoding.letterbox import BoxTransform
from app.inference.profile_kinds import OutputFormat, Task
from app.inference.profiles.profile_types import DEFAULT_SIZE, ModelProfile
from app.inference.profiles.raw_detections import RawDecoder, RawDetections


def _protos(tensor: np.ndarray) -> np.ndarray:
    return drop_batch("mask prototypes", tensor, 3)


def aabb(xywhr: np.ndarray) -> np.ndarray:
    """(n, 5) oriented boxes -> (n, 4) the axis-aligned boxes around them."""
    pts = corners(xywhr)
    return np.concatenate([pts.min(axis=1), pts.max(axis=1)], axis=1).astype(np.float32)


def _rotated(decoded: Decoded) -> RawDetections:
    xywhr, scores, classes = decoded
    return RawDetections((aabb(xywhr), scores, classes), rotated=xywhr)


def end2end(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, _iou: float
) -> RawDetections:
    rows = end2end_rows(tensors[0], 7 if profile.task is Task.OBB else 6)
    decoded, kept = select_end2end(rows, score, profile.max_detections)
    if profile.task is Task.OBB:
        xywhr = np.concatenate([rows[kept, :4], rows[kept, 6:7]], axis=1).astype(np.float32)
        return _rotated((xywhr, decoded[1], decoded[2]))
    if profile.task is Task.POSE:
        assert profile.kpt_shape is not None  # checked by ModelProfile
        k, d = profile.kpt_shape
        if rows.shape[1] != 6 + k * d:
            raise ValueError(
                f"end-to-end pose output {list(rows.shape)}: kpt_shape {k}x{d} needs {6 + k * d}"
            )
        return RawDetections(decoded, keypoints=with_scores(rows[kept, 6:].reshape(-1, k, d)))
    if profile.task is Task.SEGMENT:
        protos = _protos(tensors[1])
        return RawDetections(decoded, coefficients=rows[kept, 6 : 6 + protos.shape[0]], protos=protos)
    return RawDetections(decoded)


def yolov8_obb(rows: np.ndarray, nc: int, profile: ModelProfile, score: float, iou: float) -> RawDetections:
    decoded, _columns = select_obb(rows, nc, score, iou, profile.max_detections)
    raw = _rotated(decoded)
    raw.n_classes = nc
    return raw


def yolox(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, iou: float
) -> RawDetections:
    size = profile.input_size or DEFAULT_SIZE
    return RawDetections(decode_yolox(tensors[0], size, score, iou, profile.max_detections))


def detr(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, _iou: float
) -> RawDetections:
    decoded = decode_detr(tensors[0], tensors[1], profile.score_activation, score, profile.max_detections)
    return RawDetections(decoded)


def rtdetr(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, _iou: float
) -> RawDetections:
    return RawDetections(decode_rtdetr_ultralytics(tensors[0], score, profile.max_detections))


def torchvision(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, _iou: float
) -> RawDetections:
    boxes, labels, scores = tensors
    return RawDetections(decode_torchvision(boxes, labels, scores, score, profile.max_detections))


def scrfd(
    tensors: list[np.ndarray], profile: ModelProfile, transform: BoxTransform, score: float, iou: float
) -> RawDetections:
    size = profile.input_size or DEFAULT_SIZE
    kps = tensors[6:9] if profile.task is Task.POSE else None
    det_scale = transform.affine()[1]  # insightface's: the letterbox's, the same on both axes
    decoded, points = decode_scrfd(
        tensors[0:3], tensors[3:6], kps, size, score, iou, profile.max_detections, det_scale
    )
    return RawDetections(decoded, keypoints=None if points is None else with_scores(points))


LAYOUT_DECODERS: dict[OutputFormat, RawDecoder] = {
    OutputFormat.END2END: end2end,
    OutputFormat.YOLOX: yolox,
    OutputFormat.DETR: detr,
    OutputFormat.RTDETR: rtdetr,
    OutputFormat.TORCHVISION: torchvision,
    OutputFormat.SCRFD: scrfd,
}
