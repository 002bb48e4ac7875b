"""Profile files (TOML) and overrides of a detected `ModelProfile`.

A profile file describes a model the app cannot work out by itself, or changes part of what
it detected. Every key is optional; keys given win over the detected values::

    # my_model.toml
    labels = ["cat", "dog"]          # or: labels_file = "labels.txt" (one name per line,
                                     # blank lines ignored; path relative to this file)
    task = "detect"                  # detect | pose | segment | semantic | classify
    kpt_shape = [17, 3]              # pose: keypoints per detection, values each (x, y[, vis])
    skeleton = "coco17"              # pose: lines to draw: a preset (coco17, none) or
                                     # 0-based pairs [[0, 1], [1, 2]]
    keypoint_names = ["nose", ...]   # pose: one name per keypoint
    keypoint_style = "dots"          # pose: dots | lines (skeleton only, points under the mouse)
    logits = false                   # classify/semantic: scores are logits (softmax/sigmoid)
    [input]
    name = "images"                  # the image input tensor
    layout = "NCHW"                  # NCHW | NHWC (order of the image axes)
    dtype = "FP32"                   # FP32 | FP16 | UINT8
    size = [640, 640]                # [H, W] the image is resized/letterboxed to
    batch = true                     # send a leading batch dim of 1
    preprocess = "letterbox"         # letterbox | letterbox_top_left | letterbox_insightface |
                                     # resize | center_crop | raw
    pad_value = 114                  # letterbox padding (114 for YOLO)
    scale = 0.00392156862745098      # float inputs: x = (pixel * scale - mean) / std
    mean = [0.0, 0.0, 0.0]           # optional, per channel, after scale
    std = [1.0, 1.0, 1.0]            # optional
    channel_order = "RGB"            # RGB | BGR
    size_input = "orig_target_sizes" # an input taking each image's (width, height) (RT-DETR,
    size_input_dtype = "INT64"       # D-FINE exports): sent the model-input size; INT64 | INT32 | FP32

    [output]
    format = "yolov8"                # efficientnms | tfod | yolov5 | yolov8 | end2end | yolox
                                     # | detr | rtdetr | torchvision | scrfd
    names = ["output0"]              # efficientnms/tfod: 4 names (count, boxes, scores, classes)
    boxes_in = "input"               # input (model-input pixels) | original | normalized
    num_classes = 80                 # raw YOLO: class count, when the shape leaves it ambiguous
                                     # pose: ["output0"]; segment: ["output0", "output1"]
                                     # (detections, mask prototypes); efficientnms pose: 5
                                     # names (the 4 + keypoints); semantic/classify: 1 name
    map_layout = "CHW"               # semantic: CHW | HWC | HW (class ids), else from the shape
    score_activation = "sigmoid"     # detr: sigmoid (RT-DETR, D-FINE) | softmax (DETR, no-object last)

    [postprocess]
    score_threshold = 0.25
    iou_threshold = 0.45
    max_detections = 300
    top_k = 5                        # classify: how many classes to report
    mask_threshold = 0.5             # segment/semantic: probability a mask pixel needs
"""

from __future__ import annotations

import dataclasses
import enum
import math
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from app.inference.decoding.keypoints import parse_kpt_shape, parse_skeleton
from app.inference.decoding.labels import read_labels_file
from app.inference.profile_kinds import BoxesIn, KeypointStyle, OutputFormat, Preprocess, Task
from app.inference.profiles.profile_types import SIZE_FROM_PROFILE, ModelProfile, ProfileError, parse_kind
from app.system.bounded_read import MAX_SMALL_FILE_BYTES, BoundedReadError, read_text


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _upper(v: Any) -> str:
    return _str(v).upper()


def _lower(v: Any) -> str:
    return _str(v).lower()


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("expected a number")
    if not math.isfinite(v):  # TOML has nan and inf
        raise TypeError("expected a finite number")
    return float(v)


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("expected an integer")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError("expected true or false")
    return v


def _size(v: Any) -> tuple[int, int] | None:
    if v is None:
        return None
    if not isinstance(v, list | tuple) or len(v) != 2:
        raise TypeError("expected [H, W]")
    return _int(v[0]), _int(v[1])


def _triple(v: Any) -> tuple[float, float, float] | None:
    if v is None:
        return None
    if not isinstance(v, list | tuple) or len(v) != 3:
        raise TypeError("expected 3 numbers (one per channel)")
    return _number(v[0]), _number(v[1]), _number(v[2])


def _names(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list | tuple):
        raise TypeError("expected a list of strings")
    return tuple(_str(x) for x in v)


def _kpt_shape(v: Any) -> tuple[int, int] | None:
    if v is None:
        return None
    try:
        return parse_kpt_shape(v)
    except ValueError as exc:
        raise TypeError(str(exc)) from None


def _skeleton(v: Any) -> tuple[tuple[int, int], ...]:
    try:
        return parse_skeleton(v)
    except ValueError as exc:
        raise TypeError(str(exc)) from None


def _upper_or_none(v: Any) -> str | None:
    return None if v is None else _upper(v)


def _kind(kind: type[enum.StrEnum], name: str) -> Callable[[Any], enum.StrEnum]:
    """The file's spelling (any case) -> the enum; ProfileError naming the values allowed."""

    def convert(v: Any) -> enum.StrEnum:
        return parse_kind(kind, name, _lower(v))

    return convert


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "input_name": _str,
    "input_layout": _upper,
    "input_dtype": _upper,
    "input_size": _size,
    "has_batch_dim": _bool,
    "preprocess": _kind(Preprocess, "preprocess"),
    "pad_value": _number,
    "scale": _number,
    "mean": _triple,
    "std": _triple,
    "channel_order": _upper,
    "output_format": _kind(OutputFormat, "output_format"),
    "output_names": _names,
    "boxes_in": _kind(BoxesIn, "boxes_in"),
    "score_threshold": _number,
    "iou_threshold": _number,
    "max_detections": _int,
    "labels": _names,
    "num_classes": _int,
    "max_input_side": _int,
    "task": _kind(Task, "task"),
    "kpt_shape": _kpt_shape,
    "skeleton": _skeleton,
    "keypoint_names": _names,
    "keypoint_style": _kind(KeypointStyle, "keypoint_style"),
    "logits": _bool,
    "top_k": _int,
    "mask_threshold": _number,
    "map_layout": _upper_or_none,
    "input_size_source": _str,
    "full_decode": _bool,
    "score_activation": _lower,
    "layout_reason": _str,
    "size_input": _str,
    "size_input_dtype": _upper,
}
assert set(_CONVERT) == {f.name for f in dataclasses.fields(ModelProfile)}

MAX_INPUT_SIDE = 8192  # pixels: beyond this a model input is a mistake (and gigabytes per request)
MAX_COUNT = 100_000  # detections kept, classes


def _within(low: float, high: float) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if low <= v <= high else f"must be within {low:g}..{high:g}"

    return check


def _side_sizes(v: Any) -> str | None:
    if v is None or all(1 <= side <= MAX_INPUT_SIDE for side in v):
        return None
    return f"sides must be within 1..{MAX_INPUT_SIDE} pixels"


def _no_zero(v: Any) -> str | None:
    values = v if isinstance(v, tuple) else (v,)
    return "must not be 0 (the pixels are multiplied or divided by it)" if 0 in values else None


# Ranges checked after conversion (types and finiteness are the converters' job).
_RANGES: dict[str, Callable[[Any], str | None]] = {
    "input_size": _side_sizes,
    "pad_value": _within(0, 255),
    "scale": _no_zero,
    "std": _no_zero,
    "score_threshold": _within(0, 1),
    "iou_threshold": _within(0, 1),
    "max_detections": _within(1, MAX_COUNT),
    "num_classes": _within(1, MAX_COUNT),
}

# TOML [section] key -> ModelProfile field.
_TOML_KEYS: dict[str, dict[str, str]] = {
    "input": {
        "name": "input_name", "layout": "input_layout", "dtype": "input_dtype", "size": "input_size",
        "batch": "has_batch_dim", "preprocess": "preprocess", "pad_value": "pad_value",
        "scale": "scale", "mean": "mean", "std": "std", "channel_order": "channel_order",
        "max_input_side": "max_input_side", "size_input": "size_input",
        "size_input_dtype": "size_input_dtype",
    },
    "output": {
        "format": "output_format", "names": "output_names", "boxes_in": "boxes_in",
        "num_classes": "num_classes", "map_layout": "map_layout",
        "score_activation": "score_activation",
    },
    "postprocess": {
        "score_threshold": "score_threshold", "iou_threshold": "iou_threshold",
        "max_detections": "max_detections", "top_k": "top_k", "mask_threshold": "mask_threshold",
    },
}  # fmt: skip
# Top-level keys (besides labels / labels_file) -> ModelProfile field.
_TOP_KEYS = {
    "task": "task", "kpt_shape": "kpt_shape", "skeleton": "skeleton",
    "keypoint_names": "keypoint_names", "keypoint_style": "keypoint_style", "logits": "logits",
}  # fmt: skip


def normalise_overrides(overrides: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check and convert {ModelProfile field: value}; ProfileError naming the key and `source`."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        convert = _CONVERT.get(key)
        if convert is None:
            raise ProfileError(f"{source}: unknown key {key!r} (known: {', '.join(sorted(_CONVERT))})")
        try:
            out[key] = convert(value)
        except TypeError as exc:
            raise ProfileError(f"{source}: {key} = {value!r}: {exc}") from None
        except ProfileError as exc:  # a kind the app does not know: the values it knows
            raise ProfileError(f"{source}: {exc}") from None
        problem = _RANGES[key](out[key]) if key in _RANGES and out[key] is not None else None
        if problem:
            raise ProfileError(f"{source}: {key} = {value!r}: {problem}")
    return out


def apply_overrides(
    profile: ModelProfile, overrides: Mapping[str, Any], source: str = "profile overrides"
) -> ModelProfile:
    """A copy of `profile` with `overrides` ({field: value}, e.g. from `load_profile_file`)."""
    changes = normalise_overrides(overrides, source)
    if "input_size" in changes and "input_size_source" not in changes:
        changes["input_size_source"] = SIZE_FROM_PROFILE
    try:
        return dataclasses.replace(profile, **changes)
    except ProfileError as exc:
        raise ProfileError(f"{source}: {exc}") from None


def load_profile_file(path: str | Path) -> dict[str, Any]:
    """Read a profile file (format in this module's docstring) as {ModelProfile field: value}."""
    p = Path(path)
    try:
        data = tomllib.loads(read_text(p, MAX_SMALL_FILE_BYTES, f"profile file {p}"))
    except BoundedReadError as exc:
        raise ProfileError(str(exc)) from None
    except RecursionError:  # TOML nested thousands deep (tomllib recurses)
        raise ProfileError(f"profile file {p}: nested deeper than the TOML parser allows") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"profile file {p}: not valid TOML ({exc})") from None
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TOML_KEYS:
            if not isinstance(value, dict):
                raise ProfileError(f"profile file {p}: {key!r} must be a [{key}] section")
            for sub, sub_value in value.items():
                field = _TOML_KEYS[key].get(sub)
                if field is None:
                    known = ", ".join(_TOML_KEYS[key])
                    raise ProfileError(f"profile file {p}: unknown key {sub!r} in [{key}] (known: {known})")
                flat[field] = sub_value
        elif key == "labels":
            flat["labels"] = value
        elif key in _TOP_KEYS:
            flat[_TOP_KEYS[key]] = value
        elif key == "labels_file":
            if "labels" in data:
                raise ProfileError(f"profile file {p}: give either labels or labels_file, not both")
            try:
                flat["labels"] = read_labels_file(p.parent / _str(value))
            except (TypeError, ValueError) as exc:
                raise ProfileError(f"profile file {p}: labels_file: {exc}") from None
        else:
            known = ", ".join(["labels", "labels_file", *_TOP_KEYS, *(f"[{s}]" for s in _TOML_KEYS)])
            raise ProfileError(f"profile file {p}: unknown key {key!r} (known: {known})")
    return normalise_overrides(flat, f"profile file {p}")
