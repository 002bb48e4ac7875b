"""Guessing a `ModelProfile` from Triton's model metadata and config.

Both dicts as tritonclient.grpc returns them with `as_json=True` (proto JSON with snake_case
field names, int64 values as strings, fields at their default value left out, the config
wrapped as {"config": {...}}); plain ints and the unwrapped config are accepted too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from app.inference.decoding.labels import config_labels, resolve_labels
from app.inference.profile_kinds import BoxesIn, OutputFormat, Preprocess, Task
from app.inference.profiles.export_metadata import ExportMetadata, config_metadata
from app.inference.profiles.profile_file import normalise_overrides
from app.inference.profiles.profile_layouts import (
    end2end_output,
    rtdetr_output,
    scrfd_outputs,
    set_outputs,
    yolox_output,
)
from app.inference.profiles.profile_tasks import (
    Found,
    classify_output,
    keypoint_defaults,
    keypoints_output,
    raw_pose,
    segment_outputs,
    semantic_output,
    task_parameters,
)
from app.inference.profiles.profile_types import (
    DEFAULT_SIZE,
    OUTPUT_ROLES,
    SIZE_DEFAULT,
    SIZE_FROM_METADATA,
    SIZE_FROM_PROFILE,
    SIZE_FROM_SHAPE,
    SIZE_INPUT_DTYPES,
    ModelProfile,
    ProfileError,
)

_DTYPES = {"FP32": "FP32", "FP16": "FP16", "UINT8": "UINT8"}
# Ultralytics' prediction defaults (`conf`, `iou`), used for its exports (metadata present).
ULTRALYTICS_CONF, ULTRALYTICS_IOU = 0.25, 0.7


@dataclasses.dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: str  # without the TYPE_ prefix
    shape: tuple[int, ...]  # the full request/response shape, batch dim (-1) included

    def describe(self) -> str:
        return f"{self.name} {self.dtype} {list(self.shape)}"


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in (values or ()))


def _tensors(metadata: Mapping[str, Any], cfg: Mapping[str, Any], kind: str) -> list[_Tensor]:
    """Inputs or outputs ("input"/"output"): metadata shapes include the batch dim already;
    config dims leave it out when max_batch_size > 0."""
    meta = {t["name"]: t for t in metadata.get(kind + "s", ()) or ()}
    conf = {t["name"]: t for t in cfg.get(kind, ()) or ()}
    batching = int(cfg.get("max_batch_size", 0) or 0) > 0
    out: list[_Tensor] = []
    for name in list(meta) + [n for n in conf if n not in meta]:
        m, c = meta.get(name), conf.get(name)
        if m is not None and m.get("shape") is not None:
            shape = _ints(m["shape"])
        else:
            assert c is not None
            shape = ((-1,) if batching else ()) + _ints(c.get("dims"))
        dtype = str((m or {}).get("datatype") or (c or {}).get("data_type") or "").removeprefix("TYPE_")
        out.append(_Tensor(name, dtype, shape))
    return out


def _describe(tensors: list[_Tensor]) -> str:
    return "; ".join(t.describe() for t in tensors) or "none"


def _detect_input(inputs: list[_Tensor], cfg: Mapping[str, Any]) -> dict[str, Any]:
    images = [t for t in inputs if len(t.shape) in (3, 4)]
    if len(images) != 1:
        raise ProfileError(
            f"cannot tell which input takes the image (inputs: {_describe(inputs)}); "
            "pass --profile FILE naming it"
        )
    t = images[0]
    if t.dtype not in _DTYPES:
        raise ProfileError(f"input {t.describe()}: data type {t.dtype} not supported (FP32, FP16, UINT8)")
    shape = t.shape
    has_batch = len(shape) == 4
    if has_batch and shape[0] not in (1, -1):
        raise ProfileError(f"input {t.describe()}: fixed batch of {shape[0]} images not supported")
    a, b, c = shape[-3:]
    fmt = ""
    for conf_in in cfg.get("input", ()) or ():
        if conf_in.get("name") == t.name:
            fmt = str(conf_in.get("format", ""))
    if fmt == "FORMAT_NCHW" or (fmt != "FORMAT_NHWC" and a == 3 and c != 3):
        layout, (h, w) = "NCHW", (b, c)
    elif fmt == "FORMAT_NHWC" or c == 3:
        layout, (h, w) = "NHWC", (a, b)
    else:
        raise ProfileError(
            f"input {t.describe()}: cannot find a 3-channel axis (expected [3, H, W] or [H, W, 3]); "
            "pass --profile FILE with [input] layout"
        )
    return {
        "input_name": t.name,
        "input_layout": layout,
        "input_dtype": _DTYPES[t.dtype],
        "input_size": (h, w) if h > 0 and w > 0 else None,
        "has_batch_dim": has_batch,
        **_size_input([i for i in inputs if i is not t], cfg),
    }


# The official RT-DETR / D-FINE / DEIM exports' second input: each image's (width, height).
SIZE_INPUT_NAMES = ("orig_target_sizes", "orig_target_size", "orig_sizes", "orig_size", "target_sizes")


def _size_input(others: list[_Tensor], cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The input beside the image that takes its size, if any; ProfileError for any other
    input the model needs (the server would refuse every request without it)."""
    optional = {i.get("name") for i in cfg.get("input", ()) or () if i.get("optional")}
    found: dict[str, Any] = {}
    for t in others:
        if t.name in optional:
            continue
        if t.name.lower() in SIZE_INPUT_NAMES and t.shape[-1:] == (2,) and t.dtype in SIZE_INPUT_DTYPES:
            found = {"size_input": t.name, "size_input_dtype": t.dtype}
            continue
        raise ProfileError(
            f"input {t.describe()} is not the image and not a size input the app fills "
            f"({' / '.join(SIZE_INPUT_NAMES)}, [N, 2] of INT64, INT32 or FP32): "
            "the server needs it in every request; pass --profile FILE, or serve the model "
            "without it"
        )
    return found


def _anchor_count(size: tuple[int, int]) -> int:
    """Grid cells over YOLO's three strides (8, 16, 32): 8400 at 640x640."""
    return sum((size[0] // s) * (size[1] // s) for s in (8, 16, 32))


def _raw_yolo(t: _Tensor, size: tuple[int, int] | None, n_labels: int) -> tuple[OutputFormat, int] | None:
    """(format, class count) of a raw YOLO output, or None if the shape is not one."""
    dims = list(t.shape)
    while len(dims) > 2 and dims[0] in (1, -1):
        dims = dims[1:]
    if len(dims) != 2:
        return None
    rows, cols = dims
    if rows > 0 and (cols < 0 or rows < cols):
        return (OutputFormat.YOLOV8, rows - 4) if rows >= 5 else None  # [4 + C, N]
    if cols < 6:
        return None
    # [N, K]: YOLOv5 (K = 5 + C) or a transposed YOLOv8 (K = 4 + C).
    if n_labels:
        if cols == 5 + n_labels:
            return OutputFormat.YOLOV5, n_labels
        if cols == 4 + n_labels:
            return OutputFormat.YOLOV8, n_labels
    if size is not None and rows > 0:
        # YOLOv5 has 3 anchors per grid cell, YOLOv8 is anchor-free.
        if rows == 3 * _anchor_count(size):
            return OutputFormat.YOLOV5, cols - 5
        if rows == _anchor_count(size):
            return OutputFormat.YOLOV8, cols - 4
    if cols == 85:
        return OutputFormat.YOLOV5, 80
    if cols == 84:
        return OutputFormat.YOLOV8, 80
    return None


def _detect_output(
    outputs: list[_Tensor],
    batched: bool,
    size: tuple[int, int] | None,
    n_labels: int,
    hints: Mapping[str, Any],
    export: ExportMetadata | None = None,
) -> Found:
    """The output layout, trying each task unless `hints` (config parameters / overrides)
    name one: boxes (+ keypoints), instance masks, raw YOLO (+ pose), classes, maps."""
    wanted: Task | None = hints.get("task")
    kpt_shape = hints.get("kpt_shape")
    names = {t.name for t in outputs}
    if wanted in (None, Task.DETECT, Task.POSE):
        for fmt in (OutputFormat.EFFICIENTNMS, OutputFormat.TFOD):
            roles = OUTPUT_ROLES[fmt]
            if set(roles) <= names:
                kpts = (
                    keypoints_output(outputs, roles, kpt_shape) if fmt is OutputFormat.EFFICIENTNMS else None
                )
                if kpts is not None and wanted is not Task.DETECT:
                    return kpts
                if wanted is Task.POSE:
                    raise ProfileError(f"a pose model, but no keypoints output next to {', '.join(roles)}")
                return Found(fmt, roles, None, {"layout_reason": f"outputs named {', '.join(roles)}"})
    if wanted in (None, Task.DETECT, Task.POSE) and (faces := scrfd_outputs(outputs, size)) is not None:
        return faces
    if wanted in (None, Task.DETECT) and (sets := set_outputs(outputs, batched, n_labels)) is not None:
        return sets
    if (e2e := end2end_output(outputs, batched, export, wanted, kpt_shape)) is not None:
        return e2e
    if wanted in (None, Task.DETECT) and (detr := rtdetr_output(outputs, batched, export)) is not None:
        return detr
    if wanted in (None, Task.DETECT) and (yx := yolox_output(outputs, batched, size, n_labels)) is not None:
        return yx
    if wanted is Task.OBB:
        for t in outputs:
            found = _raw_yolo(t, size, n_labels + 1 if n_labels else 0)
            if found is not None and found[0] is OutputFormat.YOLOV8 and found[1] >= 2:
                reason = f"raw YOLOv8/11-OBB {t.name} {list(t.shape)}: 4 + {found[1] - 1} classes + angle"
                return Found(OutputFormat.YOLOV8, (t.name,), found[1] - 1, {"layout_reason": reason})
    if wanted in (None, Task.SEGMENT) and (seg := segment_outputs(outputs, batched, n_labels)) is not None:
        return seg
    if wanted in (None, Task.DETECT, Task.POSE):
        for t in outputs:
            # With keypoints in the channels the labels count cannot be 4 + C: not a hint then.
            found = _raw_yolo(t, size, 0 if kpt_shape else n_labels)
            if found is None:
                continue
            fmt, n_classes = found
            pose = None
            if fmt is OutputFormat.YOLOV8 and wanted is not Task.DETECT:
                pose = raw_pose(n_classes, n_labels, kpt_shape, wanted)
            if pose is not None:
                reason = f"raw YOLOv8/11 pose {t.name} {list(t.shape)}"
                return Found(fmt, (t.name,), pose.num_classes, {**pose.fields, "layout_reason": reason})
            if wanted is not Task.POSE:
                kind = "YOLOv5 [N, 5 + C]" if fmt is OutputFormat.YOLOV5 else "YOLOv8/11 [4 + C, N]"
                reason = f"raw {kind} {t.name} {list(t.shape)}, {n_classes} classes"
                return Found(fmt, (t.name,), n_classes, {"layout_reason": reason})
    if wanted in (None, Task.CLASSIFY) and (cls := classify_output(outputs, batched)) is not None:
        return cls
    if wanted in (None, Task.SEMANTIC) and (sem := semantic_output(outputs, batched, size)) is not None:
        return sem
    task = f"a {wanted} model, but its " if wanted else ""
    raise ProfileError(
        f"{task}output layout not recognised (outputs: {_describe(outputs)}). Known: num_dets/det_boxes/"
        "det_scores/det_classes (+ a keypoints output), num_detections/detection_boxes/detection_scores/"
        "detection_classes, raw YOLOv5 [N, 5+C], raw YOLOv8 [4+C, N] (pose [4+C+K*3, N], segment "
        "[4+C+32, N] + prototypes [32, H, W], OBB [4+C+1, N]), end-to-end YOLOv10/YOLO26 [300, 6+E], "
        "YOLOX [A, 5+C], DETR boxes [Q, 4] + logits [Q, C], boxes/labels/scores, SCRFD score_/bbox_/kps_, "
        "a score vector [C], a map [C, H, W] / [H, W, C]. "
        "Pass --profile FILE to describe the model (docs: profiles.md, 'Profile files')."
    )


def _defaults(dtype: str, size: tuple[int, int] | None, fmt: OutputFormat) -> dict[str, Any]:
    tfod = fmt is OutputFormat.TFOD
    if dtype == "UINT8" and size is None:
        # A raw image of any size: the model resizes itself and answers in its own terms.
        return {"preprocess": Preprocess.RAW, "pad_value": 0.0, "scale": 1.0,
                "boxes_in": BoxesIn.NORMALIZED if tfod else BoxesIn.ORIGINAL}  # fmt: skip
    if fmt is OutputFormat.TORCHVISION and size is None:
        # A torchvision detector with dynamic height and width resizes and normalises by itself
        # (its GeneralizedRCNNTransform): the image as it is, 0..1, as torchvision's own
        # prediction feeds it; the boxes come back in its pixels.
        return {
            "preprocess": Preprocess.RAW,
            "pad_value": 0.0,
            "scale": 1 / 255,
            "boxes_in": BoxesIn.ORIGINAL,
        }
    if fmt is OutputFormat.YOLOX:  # YOLOX's own preproc: top-left, BGR, 0..255
        return {
            "preprocess": Preprocess.LETTERBOX_TOP_LEFT,
            "pad_value": 114.0,
            "scale": 1.0,
            "channel_order": "BGR",
            "boxes_in": BoxesIn.INPUT,
            "input_size": size or DEFAULT_SIZE,
        }
    yolo = fmt in (OutputFormat.YOLOV5, OutputFormat.YOLOV8, OutputFormat.EFFICIENTNMS, OutputFormat.END2END)
    return {
        "preprocess": Preprocess.LETTERBOX if yolo else Preprocess.RESIZE,
        "pad_value": 114.0 if yolo else 0.0,
        "scale": 1.0 if dtype == "UINT8" else 1 / 255,
        "boxes_in": BoxesIn.NORMALIZED if tfod else BoxesIn.INPUT,
        "input_size": size or DEFAULT_SIZE,
    }


def _input_size(
    declared: tuple[int, int] | None, export: ExportMetadata | None, overrides: Mapping[str, Any]
) -> tuple[tuple[int, int] | None, str]:
    """The input size to feed and where it came from: a profile, the model's own fixed shape,
    the exporter's imgsz (dynamic dims), else none (a default is said so, see SIZE_DEFAULT)."""
    if "input_size" in overrides:
        return overrides["input_size"], SIZE_FROM_PROFILE
    if declared is not None:
        return declared, SIZE_FROM_SHAPE
    if export is not None and export.imgsz is not None:
        return export.imgsz, SIZE_FROM_METADATA
    return None, ""


def _export_hints(export: ExportMetadata | None) -> dict[str, Any]:
    """What an exporter's metadata says about decoding: its task and keypoint shape, and, for
    an Ultralytics export, Ultralytics' own prediction defaults (conf 0.25, IoU 0.7) and its
    full-size image decoding (the same pixels as its own predictor)."""
    if export is None:
        return {}
    hints: dict[str, Any] = {}
    if export.task is not None:
        hints["task"] = export.task
    if export.kpt_shape is not None:
        hints["kpt_shape"] = export.kpt_shape
    if export.is_ultralytics:
        hints.update(score_threshold=ULTRALYTICS_CONF, iou_threshold=ULTRALYTICS_IOU, full_decode=True)
        if export.task is Task.CLASSIFY:  # its classify transforms, not the detectors' letterbox
            hints["preprocess"] = Preprocess.CENTER_CROP
    return hints


def detect_profile(
    metadata: Mapping[str, Any], config: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> ModelProfile:
    """The profile of a model from its metadata and config.

    `overrides` (see `apply_overrides`) win over what is detected; when they give both
    `output_format` and `output_names`, an unrecognised output layout is not an error.
    An exporter's metadata (config parameter `metadata`, export_metadata.py) gives the class
    names, the input size of dynamic dims, the task and Ultralytics' thresholds; the config's
    own parameters win over it."""
    cfg = config.get("config", config)
    overrides = normalise_overrides(overrides or {}, "overrides")
    inp = _detect_input(_tensors(metadata, cfg, "input"), cfg)
    export = config_metadata(cfg)
    labels_cfg = config_labels(cfg) or (export.names if export is not None else ())
    n_labels = len(overrides.get("labels") or labels_cfg)
    size, size_source = _input_size(inp["input_size"], export, overrides)
    export_hints = _export_hints(export)
    hints = {**export_hints, **task_parameters(cfg), **overrides}
    batched = int(cfg.get("max_batch_size", 0) or 0) > 0
    try:
        found = _detect_output(_tensors(metadata, cfg, "output"), batched, size, n_labels, hints, export)
    except ProfileError:
        if "output_format" not in overrides or "output_names" not in overrides:
            raise
        found = Found(overrides["output_format"], tuple(overrides["output_names"]))
    fmt: OutputFormat = overrides.get("output_format", found.output_format)
    fields = {
        **inp,
        "output_format": fmt,
        "output_names": found.output_names,
        "num_classes": found.num_classes,
    }
    fields.update(_defaults(inp["input_dtype"], size, fmt))
    if fields["preprocess"] is not Preprocess.RAW:
        fields["input_size_source"] = size_source or SIZE_DEFAULT
    raw_formats = (OutputFormat.YOLOV5, OutputFormat.YOLOV8, OutputFormat.YOLOX)
    raw_classes = found.num_classes if fmt in raw_formats else None
    fields["labels"] = resolve_labels(None, labels_cfg, raw_classes)
    fields.update({k: v for k, v in export_hints.items() if k.endswith("_threshold")})
    fields.update(_threshold_parameters(cfg))
    if fields["preprocess"] is Preprocess.RAW:
        fields["max_input_side"] = _int_parameter(cfg, "max_input_side", 16, 16384)
    # The task, kpt_shape and full_decode of an export (its thresholds went in above).
    fields.update({k: v for k, v in export_hints.items() if not k.endswith("_threshold")})
    fields.update(task_parameters(cfg))
    fields.update(found.fields)
    fields.update(keypoint_defaults({**fields, **overrides}))
    if fields.get("kpt_shape") == (17, 3) and found.num_classes == 1 and not fields["labels"]:
        fields["labels"] = ("person",)  # Ultralytics' pose models: one class, COCO's person
    if fmt is OutputFormat.SCRFD and not fields["labels"]:
        fields["labels"] = ("face",)  # a face detector's one class
    if "input_size" in overrides:
        overrides = {"input_size_source": SIZE_FROM_PROFILE, **overrides}
    # Overrides applied in one go: a detected value may only be valid alongside an override.
    try:
        return ModelProfile(**{**fields, **overrides})
    except ProfileError as exc:
        raise ProfileError(f"model {cfg.get('name') or metadata.get('name') or '?'}: {exc}") from None


def _parameter(cfg: Mapping[str, Any], key: str) -> Any:
    entry = (cfg.get("parameters") or {}).get(key)
    return entry.get("string_value") if isinstance(entry, dict) else entry


def _int_parameter(cfg: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    """An integer hint in the config's `parameters`, or None when missing or out of range."""
    try:
        value = int(_parameter(cfg, key))
    except (TypeError, ValueError):
        return None  # a malformed hint is not worth failing the model over
    return value if low <= value <= high else None


def _threshold_parameters(cfg: Mapping[str, Any]) -> dict[str, float]:
    """`score_threshold` / `iou_threshold` entries of the config's `parameters`, if numbers."""
    out: dict[str, float] = {}
    params = cfg.get("parameters") or {}
    for key in ("score_threshold", "iou_threshold"):
        entry = params.get(key)
        value = entry.get("string_value") if isinstance(entry, dict) else entry
        try:
            number = float(value) if value is not None else None
        except (TypeError, ValueError):
            number = None  # a malformed hint is not worth failing the model over
        if number is not None and 0 <= number <= 1:
            out[key] = number
    return out
