"""Telling from a model's outputs (and its config parameters) what it does beyond boxes:
keypoints (pose), instance masks (segment), a per-pixel class map (semantic) or a score
vector (classify). Used by profile_detect.py; shapes include the batch dim (-1) if any.

Config parameters read (string values, as `parameters { key: ... value { string_value } }`):
`task` (detect | pose | segment | semantic | classify), `kpt_shape` ("17,3"), `skeleton`
("coco17" or pairs "0-1, 1-2"), `keypoint_names` (commas or newlines), `keypoint_style`
("dots", or "lines": the skeleton only, each point under the mouse), `logits` ("true"/"false"),
`top_k`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.inference.decoding.decode_pose import keypoints_shape
from app.inference.decoding.keypoints import (
    COCO_KEYPOINT_NAMES,
    COCO_SKELETON,
    parse_kpt_shape,
    parse_skeleton,
)
from app.inference.decoding.labels import parse_labels_text
from app.inference.profile_kinds import KeypointStyle, OutputFormat, Task
from app.inference.profiles.profile_types import ProfileError

_INT_DTYPES = {"INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"}
MIN_MAP_SIZE = 8  # a semantic map's spatial dims are at least this (or dynamic)
MAX_PROTOS = 256  # mask prototype channels (Ultralytics: 32)


class Tensor(Protocol):
    """An input/output as profile_detect describes it (shape with Triton's batch dim)."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class Found:
    """An output layout recognised: format, the outputs read (in role order), the class count
    of a raw YOLO output, and the task-specific profile fields."""

    output_format: OutputFormat
    output_names: tuple[str, ...]
    num_classes: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)


def _param(cfg: Mapping[str, Any], key: str) -> str | None:
    entry = (cfg.get("parameters") or {}).get(key)
    value = entry.get("string_value") if isinstance(entry, dict) else entry
    return None if value is None else str(value)


def _task(text: str) -> Task:
    try:
        return Task(text.strip().lower())
    except ValueError:
        raise ValueError(f"expected one of {', '.join(Task)}") from None


def _keypoint_style(text: str) -> KeypointStyle:
    try:
        return KeypointStyle(text.strip().lower())
    except ValueError:
        raise ValueError(f"expected one of {', '.join(KeypointStyle)}") from None


def _flag(text: str) -> bool:
    if text.strip().lower() not in ("true", "false", "1", "0"):
        raise ValueError("expected true or false")
    return text.strip().lower() in ("true", "1")


_PARAMETERS: dict[str, Callable[[str], Any]] = {
    "task": _task,
    "kpt_shape": parse_kpt_shape,
    "skeleton": parse_skeleton,
    "keypoint_names": parse_labels_text,
    "keypoint_style": _keypoint_style,
    "logits": _flag,
    "top_k": int,
}


def task_parameters(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The task-related `parameters` of a model config, as ModelProfile fields.
    ProfileError naming the parameter when one is malformed (they decide the decoding)."""
    out: dict[str, Any] = {}
    for key, parse in _PARAMETERS.items():
        text = _param(cfg, key)
        if text is None:
            continue
        try:
            out[key] = parse(text)
        except ValueError as exc:
            raise ProfileError(
                f"model {cfg.get('name') or '?'}: config parameter {key} = {text!r}: {exc}"
            ) from None
    return out


def core_shape(t: Tensor, batched: bool, rank: int) -> tuple[int, ...]:
    """The shape of one image's output: without Triton's batch dim (`batched`: the model's
    max_batch_size > 0), then without leading dims of 1 beyond `rank`."""
    dims = tuple(t.shape[1:] if batched else t.shape)
    while len(dims) > rank and dims[0] in (1, -1):
        dims = dims[1:]
    return dims


def keypoints_output(
    outputs: Sequence[Tensor], used: Sequence[str], kpt_shape: tuple[int, int] | None
) -> Found | None:
    """An extra output next to EfficientNMS-style detections holding each slot's keypoints:
    [.., M, K, 2|3] or, with `kpt_shape` known, [.., M, K*D]; or named *keypoint*/*landmark*."""
    for t in outputs:
        if t.name in used:
            continue
        told = keypoints_shape(t.shape)
        named = any(word in t.name.lower() for word in ("keypoint", "landmark", "kpt"))
        flat_fits = kpt_shape is not None and t.shape and t.shape[-1] == kpt_shape[0] * kpt_shape[1]
        if told or named or flat_fits:
            shape = kpt_shape or told
            if shape is None:
                raise ProfileError(
                    f"keypoints output {t.name} {list(t.shape)}: give kpt_shape (config parameter or profile)"
                )
            return Found(
                OutputFormat.EFFICIENTNMS, (*used, t.name), None, {"task": Task.POSE, "kpt_shape": shape}
            )
    return None


def segment_outputs(outputs: Sequence[Tensor], batched: bool, n_labels: int) -> Found | None:
    """Raw YOLOv8-seg: detections [4 + C + nm, N] (or transposed) and prototypes [nm, Hm, Wm]."""
    protos = [t for t in outputs if len(core_shape(t, batched, 3)) == 3]
    rows = [t for t in outputs if len(core_shape(t, batched, 2)) == 2]
    for p in protos:
        nm, hm, wm = core_shape(p, batched, 3)
        if not 1 <= nm <= MAX_PROTOS or not all(d == -1 or d >= MIN_MAP_SIZE for d in (hm, wm)):
            continue
        for t in rows:
            if t.name == p.name:
                continue
            a, b = core_shape(t, batched, 2)
            channels = min(d for d in (a, b) if d > 0) if max(a, b) > 0 else -1
            nc = channels - 4 - nm
            if nc >= 1 and (not n_labels or nc == n_labels):
                return Found(OutputFormat.YOLOV8, (t.name, p.name), nc, {"task": Task.SEGMENT})
    return None


def raw_pose(
    channels_minus_box: int, n_labels: int, kpt_shape: tuple[int, int] | None, wanted: Task | None
) -> Found | None:
    """Whether a raw YOLOv8 output with 4 + `channels_minus_box` channels is a pose output,
    and its fields (task, kpt_shape, num_classes). Names of the output come from the caller."""
    extra = channels_minus_box
    if kpt_shape is not None:
        k, d = kpt_shape
        nc = extra - k * d
        if nc < 1:
            raise ProfileError(f"kpt_shape {k}x{d} leaves no class scores in {4 + extra} channels")
        return Found(OutputFormat.YOLOV8, (), nc, {"task": Task.POSE, "kpt_shape": kpt_shape})
    if n_labels and extra > n_labels and (extra - n_labels) % 3 == 0:
        return Found(
            OutputFormat.YOLOV8, (), n_labels, {"task": Task.POSE, "kpt_shape": ((extra - n_labels) // 3, 3)}
        )
    if (not n_labels or n_labels == 1) and extra == 1 + 17 * 3:  # Ultralytics' COCO person pose
        return Found(OutputFormat.YOLOV8, (), 1, {"task": Task.POSE, "kpt_shape": (17, 3)})
    if wanted is Task.POSE:
        raise ProfileError(
            f"a pose model, but the keypoint layout of {4 + extra} channels is unknown: give kpt_shape"
        )
    return None


def classify_output(outputs: Sequence[Tensor], batched: bool) -> Found | None:
    """A single output that is one score vector per image: [C], [1, C], [C, 1, 1]..."""
    vectors = [t for t in outputs if len([d for d in core_shape(t, batched, 1) if d != 1]) == 1]
    if len(outputs) == 1 and len(vectors) == 1 and max(core_shape(vectors[0], batched, 1)) >= 2:
        return Found(OutputFormat.CLASSIFY, (vectors[0].name,), None, {"task": Task.CLASSIFY})
    return None


def semantic_output(outputs: Sequence[Tensor], batched: bool, size: tuple[int, int] | None) -> Found | None:
    """A per-pixel map: [C, H, W] / [H, W, C] (C the smaller end axis, H and W >= 8 or
    dynamic), integer class ids [H, W], or a float [H, W] of the input's size."""
    for t in outputs:
        dims = core_shape(t, batched, 3)
        spatial_ok = all(d == -1 or d >= MIN_MAP_SIZE for d in dims[-2:])
        if len(dims) == 3:
            c_first, c_last = dims[0], dims[2]
            if c_first > 0 and (c_last == -1 or c_first < c_last) and spatial_ok:
                return Found(
                    OutputFormat.SEMANTIC, (t.name,), None, {"task": Task.SEMANTIC, "map_layout": "CHW"}
                )
            if c_last > 0 and (c_first == -1 or c_last < c_first):
                h, w = dims[:2]
                if all(d == -1 or d >= MIN_MAP_SIZE for d in (h, w)):
                    return Found(
                        OutputFormat.SEMANTIC, (t.name,), None, {"task": Task.SEMANTIC, "map_layout": "HWC"}
                    )
        dims = core_shape(t, batched, 2)
        if len(dims) == 2 and spatial_ok and (t.dtype in _INT_DTYPES or (size is not None and dims == size)):
            return _semantic(t, "HW")
    return None


def _semantic(t: Tensor, layout: str) -> Found:
    return Found(OutputFormat.SEMANTIC, (t.name,), None, {"task": Task.SEMANTIC, "map_layout": layout})


def keypoint_defaults(fields: Mapping[str, Any]) -> dict[str, Any]:
    """COCO-17 names and skeleton for a 17-keypoint pose model that names none."""
    shape = fields.get("kpt_shape")
    if fields.get("task") is not Task.POSE or shape is None or shape[0] != len(COCO_KEYPOINT_NAMES):
        return {}
    out: dict[str, Any] = {}
    if "skeleton" not in fields:
        out["skeleton"] = COCO_SKELETON
    if "keypoint_names" not in fields:
        out["keypoint_names"] = COCO_KEYPOINT_NAMES
    return out
