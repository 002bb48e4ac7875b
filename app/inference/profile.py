"""Model profiles: image -> model input tensor, output tensors -> detections in original pixels.

The public face of the profile modules:
- `ModelProfile`, `ProfileError` (profile_types.py),
- `detect_profile(metadata, config, overrides=None)` (profile_detect.py),
- `load_profile_file(path)`, `apply_overrides(profile, overrides)` (profile_file.py; the TOML
  format is documented there),
- `preprocess(image, profile)` and `postprocess(outputs, profile, transform, ...)` (here).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from app.inference.decoders import (
    Decoded,
    decode_efficientnms,
    decode_tfod,
    decode_yolov5,
    decode_yolov8,
    yolov8_rows,
)
from app.inference.labels import label_name, resolve_labels
from app.inference.letterbox import (
    BoxTransform,
    clip_boxes,
    fit_within,
    identity,
    letterbox,
    stretch_resize,
)
from app.inference.profile_detect import detect_profile
from app.inference.profile_file import apply_overrides, load_profile_file
from app.inference.profile_types import DEFAULT_SIZE, ModelProfile, ProfileError
from app.inference.result import Detection

__all__ = [
    "ModelProfile",
    "ProfileError",
    "apply_overrides",
    "detect_profile",
    "load_profile_file",
    "postprocess",
    "preprocess",
]

_NUMPY_DTYPES = {"FP32": np.float32, "FP16": np.float16, "UINT8": np.uint8}


def preprocess(image: np.ndarray, profile: ModelProfile) -> tuple[np.ndarray, BoxTransform]:
    """RGB uint8 HxWx3 image -> (contiguous tensor to send as `profile.input_name`, transform
    mapping the model's boxes back to this image)."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"preprocess expects an RGB uint8 HxWx3 image, got {image.dtype} {image.shape} "
            "(use images.to_rgb_uint8 first)"
        )
    size = profile.input_size or DEFAULT_SIZE
    transform: BoxTransform
    if profile.preprocess == "letterbox":
        img, transform = letterbox(image, size, profile.pad_value)
    elif profile.preprocess == "resize":
        img, transform = stretch_resize(image, size)
    elif profile.max_input_side:
        img, transform = fit_within(image, profile.max_input_side)
    else:
        img, transform = identity(image)
    if profile.channel_order == "BGR":
        img = img[:, :, ::-1]
    if profile.input_layout == "NCHW":
        # Transpose while still uint8: 4x less memory to move than after the float conversion.
        img = img.transpose(2, 0, 1)
    if profile.input_dtype == "UINT8":
        tensor = np.ascontiguousarray(img, dtype=np.uint8)
    else:
        x = img.astype(np.float32)
        if profile.scale != 1.0:
            x *= np.float32(profile.scale)
        if profile.mean is not None or profile.std is not None:
            shape = (3, 1, 1) if profile.input_layout == "NCHW" else (1, 1, 3)
            x -= np.asarray(profile.mean or (0.0, 0.0, 0.0), np.float32).reshape(shape)
            x /= np.asarray(profile.std or (1.0, 1.0, 1.0), np.float32).reshape(shape)
        tensor = np.ascontiguousarray(x, dtype=_NUMPY_DTYPES[profile.input_dtype])
    if profile.has_batch_dim:
        tensor = tensor[None]
    return tensor, transform


def _decode(
    outputs: Mapping[str, np.ndarray],
    profile: ModelProfile,
    transform: BoxTransform,
    score: float,
    iou: float,
) -> tuple[Decoded, int | None]:
    """Decoded boxes and, for raw YOLO, the class count of the output."""
    missing = [n for n in profile.output_names if n not in outputs]
    if missing:
        raise ProfileError(
            f"model outputs {missing} missing from the response (got: {sorted(outputs)}); "
            "check [output] names in the profile"
        )
    tensors = [np.asarray(outputs[n]) for n in profile.output_names]
    fmt, limit = profile.output_format, profile.max_detections
    if fmt == "efficientnms":
        num, boxes, scores, classes = tensors
        return decode_efficientnms(num, boxes, scores, classes, score, limit), None
    if fmt == "tfod":
        num, boxes, scores, classes = tensors
        return decode_tfod(num, boxes, scores, classes, score, transform.dst_w, transform.dst_h, limit), None
    if fmt == "yolov5":
        return decode_yolov5(tensors[0], score, iou, limit), int(tensors[0].shape[-1]) - 5
    n_classes = yolov8_rows(tensors[0], profile.num_classes).shape[0] - 4
    return decode_yolov8(tensors[0], score, iou, limit, profile.num_classes), n_classes


def postprocess(
    outputs: Mapping[str, np.ndarray],
    profile: ModelProfile,
    transform: BoxTransform,
    score_threshold: float | None = None,
    iou_threshold: float | None = None,
) -> list[Detection]:
    """Output tensors (by name) -> detections in original-image pixels, clipped to the image,
    best score first. Thresholds default to the profile's."""
    score = profile.score_threshold if score_threshold is None else score_threshold
    iou = profile.iou_threshold if iou_threshold is None else iou_threshold
    (boxes, scores, classes), n_classes = _decode(outputs, profile, transform, score, iou)
    if profile.boxes_in == "original" and profile.preprocess == "raw":
        # "The pixels of the image sent": the original, or the client's downscaled copy.
        boxes = transform.to_original(boxes)
    elif profile.boxes_in == "original":
        boxes = clip_boxes(boxes, transform.src_w, transform.src_h)
    else:
        if profile.boxes_in == "normalized" and profile.output_format != "tfod":  # tfod scales itself
            boxes = boxes * np.array([transform.dst_w, transform.dst_h] * 2, np.float32)
        boxes = transform.to_original(boxes)
    # A box entirely outside the image is empty after clipping: not a detection.
    visible = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    labels = profile.labels or resolve_labels(raw_yolo_classes=n_classes)
    return [
        Detection(
            box=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
            score=float(s),
            class_id=int(c),
            label=label_name(labels, int(c)),
        )
        for b, s, c in zip(boxes[visible], scores[visible], classes[visible], strict=True)
    ]
