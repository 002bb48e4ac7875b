"""Output tensors -> what one request found, in original-image pixels: detections (with
keypoints or instance masks when the model gives them), semantic masks, or top-k classes.

Numbers a model should never give (NaN or infinite coordinates, scores or keypoints, boxes
with x2 < x1 or y2 < y1, negative class ids) never reach a result: such detections (and
such classes of a classifier) are dropped and counted in `DecodedOutputs.dropped_invalid`,
before clipping could turn an infinite box into a full-image one.

`decode_outputs` is what the session runs for each reply; `postprocess` (the detections
only) is kept for callers that only want boxes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from app.inference.decoding.decode_classify import non_finite_scores, top_k
from app.inference.decoding.decode_masks import instance_masks
from app.inference.decoding.decode_obb import obb_to_original
from app.inference.decoding.decode_pose import selected_keypoints, yolov8_keypoints
from app.inference.decoding.decode_semantic import semantic_masks
from app.inference.decoding.decoders import (
    decode_tfod,
    decode_yolov5,
    select_efficientnms,
    select_yolov8,
    yolov8_rows,
)
from app.inference.decoding.keypoints import keypoints_to_original
from app.inference.decoding.labels import label_name, resolve_labels
from app.inference.decoding.letterbox import BoxTransform, clip_boxes
from app.inference.masks import BinaryMask
from app.inference.profile_kinds import BoxesIn, OutputFormat, Preprocess, Task
from app.inference.profiles.layout_decoders import LAYOUT_DECODERS, aabb, yolov8_obb
from app.inference.profiles.profile_types import ModelProfile, ProfileError
from app.inference.profiles.raw_detections import RawDecoder
from app.inference.profiles.raw_detections import RawDetections as _Raw
from app.inference.result import ClassScore, Detection, SemanticMask


@dataclass
class DecodedOutputs:
    """Everything one reply carried; `masks`/`classes` None when the model gives none."""

    detections: list[Detection]
    masks: list[SemanticMask] | None = None
    classes: list[ClassScore] | None = None
    dropped_invalid: int = 0  # detections (or classes) with numbers no model should give


def _tensors(outputs: Mapping[str, np.ndarray], profile: ModelProfile) -> list[np.ndarray]:
    missing = [n for n in profile.output_names if n not in outputs]
    if missing:
        raise ProfileError(
            f"model outputs {missing} missing from the response (got: {sorted(outputs)}); "
            "check [output] names in the profile"
        )
    return [np.asarray(outputs[n]) for n in profile.output_names]


def _protos(tensor: np.ndarray) -> np.ndarray:
    a = tensor
    while a.ndim > 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 3:
        raise ValueError(
            f"mask prototypes: expected [nm, Hm, Wm] (one image per request), got {list(tensor.shape)}"
        )
    return a


def _raw_rows(output: np.ndarray, profile: ModelProfile, extra: int) -> tuple[np.ndarray, int]:
    """Channels-first [4 + C + extra, N] rows of a raw YOLOv8 output, and C."""
    total = None if profile.num_classes is None else profile.num_classes + extra
    rows = yolov8_rows(output, total)
    n_classes = rows.shape[0] - 4 - extra
    if n_classes < 1:
        raise ValueError(
            f"raw YOLOv8 output {list(output.shape)}: no room for classes after {extra} extra values"
        )
    return rows, n_classes


def _efficientnms(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, _iou: float
) -> _Raw:
    num, boxes, scores, classes = tensors[:4]
    decoded, rows = select_efficientnms(num, boxes, scores, classes, score, profile.max_detections)
    pose = profile.task is Task.POSE
    kpts = selected_keypoints(tensors[4], rows, profile.kpt_shape) if pose else None
    return _Raw(decoded, keypoints=kpts)


def _tfod(
    tensors: list[np.ndarray], profile: ModelProfile, transform: BoxTransform, score: float, _iou: float
) -> _Raw:
    num, boxes, scores, classes = tensors
    w, h = transform.dst_w, transform.dst_h
    return _Raw(decode_tfod(num, boxes, scores, classes, score, w, h, profile.max_detections))


def _yolov5(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, iou: float
) -> _Raw:
    return _Raw(decode_yolov5(tensors[0], score, iou, profile.max_detections), int(tensors[0].shape[-1]) - 5)


def _yolov8(
    tensors: list[np.ndarray], profile: ModelProfile, _transform: BoxTransform, score: float, iou: float
) -> _Raw:
    limit = profile.max_detections
    if profile.task is Task.POSE:
        assert profile.kpt_shape is not None  # checked by ModelProfile
        k, d = profile.kpt_shape
        rows, nc = _raw_rows(tensors[0], profile, k * d)
        decoded, columns = select_yolov8(rows, nc, score, iou, limit)
        return _Raw(decoded, nc, keypoints=yolov8_keypoints(rows, columns, 4 + nc, profile.kpt_shape))
    if profile.task is Task.SEGMENT:
        protos = _protos(tensors[1])
        rows, nc = _raw_rows(tensors[0], profile, protos.shape[0])
        decoded, columns = select_yolov8(rows, nc, score, iou, limit)
        return _Raw(decoded, nc, coefficients=rows[4 + nc :, columns].T, protos=protos)
    if profile.task is Task.OBB:
        rows, nc = _raw_rows(tensors[0], profile, 1)
        return yolov8_obb(rows, nc, profile, score, iou)
    rows, nc = _raw_rows(tensors[0], profile, 0)
    return _Raw(select_yolov8(rows, nc, score, iou, limit)[0], nc)


DETECTION_DECODERS: dict[OutputFormat, RawDecoder] = {
    OutputFormat.EFFICIENTNMS: _efficientnms,
    OutputFormat.TFOD: _tfod,
    OutputFormat.YOLOV5: _yolov5,
    OutputFormat.YOLOV8: _yolov8,
    **LAYOUT_DECODERS,
}


def boxes_in(profile: ModelProfile) -> BoxesIn:
    """Where the model's coordinates live. A raw-image model's "original" pixels are those of
    the image it was sent: the original, or the client's downscaled copy (max_input_side),
    which the transform maps back like model-input pixels."""
    raw = profile.preprocess is Preprocess.RAW
    return BoxesIn.INPUT if profile.boxes_in is BoxesIn.ORIGINAL and raw else profile.boxes_in


def _to_original(boxes: np.ndarray, profile: ModelProfile, transform: BoxTransform) -> np.ndarray:
    if boxes_in(profile) is BoxesIn.ORIGINAL:
        return clip_boxes(boxes, transform.src_w, transform.src_h)
    tfod = profile.output_format is OutputFormat.TFOD  # scales itself
    if profile.boxes_in is BoxesIn.NORMALIZED and not tfod:
        boxes = boxes * np.array([transform.dst_w, transform.dst_h] * 2, np.float32)
    return transform.to_original(boxes)


def _input_boxes(boxes: np.ndarray, profile: ModelProfile, transform: BoxTransform) -> np.ndarray:
    """The decoder's boxes in model-input pixels, unclipped: where Ultralytics crops masks."""
    b = np.array(boxes, np.float32).reshape(-1, 4)
    space = boxes_in(profile)
    if space is BoxesIn.NORMALIZED and profile.output_format is not OutputFormat.TFOD:
        b *= np.array([transform.dst_w, transform.dst_h] * 2, np.float32)
    elif space is BoxesIn.ORIGINAL:
        sx, sy, tx, ty = transform.affine()
        b = b * np.array([sx, sy, sx, sy], np.float32) + np.array([tx, ty, tx, ty], np.float32)
    return b


def decode_outputs(
    outputs: Mapping[str, np.ndarray],
    profile: ModelProfile,
    transform: BoxTransform,
    score_threshold: float | None = None,
    iou_threshold: float | None = None,
) -> DecodedOutputs:
    """Output tensors (by name) -> everything found, in original-image pixels. Detections
    are clipped to the image, best score first. Thresholds default to the profile's."""
    tensors = _tensors(outputs, profile)
    if profile.output_format is OutputFormat.CLASSIFY:
        classes = top_k(tensors[0], profile.labels, profile.top_k, profile.logits)
        return DecodedOutputs([], classes=classes, dropped_invalid=non_finite_scores(tensors[0]))
    if profile.output_format is OutputFormat.SEMANTIC:
        semantic = semantic_masks(
            tensors[0], transform, profile.labels, profile.map_layout, profile.logits, profile.mask_threshold
        )
        return DecodedOutputs([], masks=semantic)
    score = profile.score_threshold if score_threshold is None else score_threshold
    iou = profile.iou_threshold if iou_threshold is None else iou_threshold
    # NaN and infinities in a model's output are dropped below, not warned about on the way.
    with np.errstate(invalid="ignore", over="ignore"):
        raw = DETECTION_DECODERS[profile.output_format](tensors, profile, transform, score, iou)
    raw, dropped = _drop_invalid(raw)
    dropped += _unscored(tensors, profile)
    return DecodedOutputs(_detections(raw, profile, transform), dropped_invalid=dropped)


def _drop_invalid(raw: _Raw) -> tuple[_Raw, int]:
    """`raw` without the detections no model should give, and how many there were."""
    boxes, scores, classes = raw.decoded
    valid = np.isfinite(boxes).all(axis=1) & np.isfinite(scores) & (classes >= 0)
    with np.errstate(invalid="ignore"):
        valid &= (boxes[:, 2] >= boxes[:, 0]) & (boxes[:, 3] >= boxes[:, 1])
    if raw.keypoints is not None:
        valid &= np.isfinite(raw.keypoints).all(axis=(1, 2))
    if raw.rotated is not None:
        valid &= np.isfinite(raw.rotated).all(axis=1)
    dropped = int(np.count_nonzero(~valid))
    if not dropped:
        return raw, 0
    kept = (boxes[valid], scores[valid], classes[valid])
    return (
        dataclasses.replace(
            raw,
            decoded=kept,
            keypoints=None if raw.keypoints is None else raw.keypoints[valid],
            coefficients=None if raw.coefficients is None else raw.coefficients[valid],
            rotated=None if raw.rotated is None else raw.rotated[valid],
        ),
        dropped,
    )


def _unscored(tensors: list[np.ndarray], profile: ModelProfile) -> int:
    """Detections an already-decoded output (EfficientNMS, TF OD) counts whose score is NaN:
    no threshold compares with NaN, so the decoder left them out without a word. (A raw YOLO
    output's candidates are not detections until a score above the threshold makes them so.)"""
    if profile.output_format not in (OutputFormat.EFFICIENTNMS, OutputFormat.TFOD):
        return 0
    num, _boxes, scores = tensors[:3]
    flat = np.asarray(scores).reshape(-1)
    count = np.asarray(num).reshape(-1)
    n = int(np.clip(count[0], 0, flat.size)) if count.size == 1 and np.isfinite(count[0]) else 0
    return int(np.count_nonzero(np.isnan(flat[:n].astype(np.float32))))


def _detections(raw: _Raw, profile: ModelProfile, transform: BoxTransform) -> list[Detection]:
    boxes, scores, classes = raw.decoded
    rotated: list[tuple[float, float, float, float, float] | None] = [None] * len(boxes)
    if raw.rotated is not None:
        xywhr = obb_to_original(raw.rotated, transform.affine())
        rotated = [(b[0], b[1], b[2], b[3], b[4]) for b in xywhr.tolist()]
        boxes = clip_boxes(aabb(xywhr), transform.src_w, transform.src_h)
    else:
        boxes = _to_original(boxes, profile, transform)
    # A box entirely outside the image is empty after clipping: not a detection.
    visible = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    labels = profile.labels or resolve_labels(raw_yolo_classes=raw.n_classes)
    keypoints: list[tuple[tuple[float, float, float], ...] | None] = [None] * len(boxes)
    if raw.keypoints is not None:
        xy = keypoints_to_original(raw.keypoints[..., :2], transform, boxes_in(profile))
        points = np.concatenate([xy, raw.keypoints[..., 2:3]], axis=-1).tolist()
        keypoints = [tuple((p[0], p[1], p[2]) for p in det) for det in points]
    masks: list[BinaryMask | None] = [None] * len(boxes)
    if raw.coefficients is not None and raw.protos is not None:
        crop = _input_boxes(raw.decoded[0], profile, transform)
        masks = instance_masks(raw.coefficients, raw.protos, crop, transform, profile.mask_threshold)
        # As Ultralytics does: a detection whose mask is empty at the input's size is none.
        visible &= np.array([m is not None for m in masks], bool)
    return [
        Detection(
            box=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
            score=float(s),
            class_id=int(c),
            label=label_name(labels, int(c)),
            keypoints=k,
            mask=m,
            obb=o,
        )
        for b, s, c, k, m, o, v in zip(
            boxes, scores, classes, keypoints, masks, rotated, visible, strict=True
        )
        if v
    ]


def postprocess(
    outputs: Mapping[str, np.ndarray],
    profile: ModelProfile,
    transform: BoxTransform,
    score_threshold: float | None = None,
    iou_threshold: float | None = None,
) -> list[Detection]:
    """The detections of `decode_outputs` (empty for semantic / classification models)."""
    return decode_outputs(outputs, profile, transform, score_threshold, iou_threshold).detections
