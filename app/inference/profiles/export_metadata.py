"""What an exporter wrote about its model: Ultralytics' metadata (class names, `imgsz`,
`stride`, `task`, `kpt_shape`), from a Triton config or from an ONNX file.

Ultralytics' Triton guide writes the exporter's metadata dict into config.pbtxt as
`parameters { key: "metadata" value { string_value: "%s" } }`, i.e. the dict's Python repr
(`{'names': {0: 'person', ...}, 'imgsz': [640, 640], ...}`); its own client reads it back
with `ast.literal_eval`. JSON is taken as well. Never `eval`: a config is data from a server.
An ONNX file keeps the same entries in `metadata_props`, each value a `str()` of its own
(`"[640, 640]"`, `"{0: 'person'}"`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.inference.decoding.keypoints import parse_kpt_shape
from app.inference.profile_kinds import Task
from app.inference.profiles.profile_types import ProfileError

METADATA_PARAMETER = "metadata"
# A metadata text longer than this is not an exporter's (Ultralytics': a few kB with 80 names).
MAX_METADATA_CHARS = 1_000_000
# Ultralytics' task names that the app decodes, as its own tasks.
_TASKS = {
    "detect": Task.DETECT,
    "segment": Task.SEGMENT,
    "pose": Task.POSE,
    "classify": Task.CLASSIFY,
    "obb": Task.OBB,
}


@dataclass(frozen=True)
class ExportMetadata:
    """The entries the app uses, each None (or empty) when the exporter did not write it.
    `source`: where they were read, for messages ("config parameter metadata")."""

    source: str
    names: tuple[str, ...] = ()
    imgsz: tuple[int, int] | None = None  # (H, W)
    stride: int | None = None
    task: Task | None = None
    kpt_shape: tuple[int, int] | None = None
    # Ultralytics 8.4 writes whether the head is NMS-free (YOLOv10/YOLO26 with nms=False:
    # [N, 300, 6 + E]); False on an RT-DETR export, whose [N, 300, 6] rows mean cxcywh.
    end2end: bool | None = None

    @property
    def is_ultralytics(self) -> bool:
        """An Ultralytics export (its metadata always has the image size or the task)."""
        return self.imgsz is not None or self.task is not None


def _literal(text: str) -> Any:
    """A JSON document or a Python literal (dict repr); ValueError saying why not."""
    if len(text) > MAX_METADATA_CHARS:
        raise ValueError(f"{len(text)} characters, more than an exporter writes ({MAX_METADATA_CHARS})")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc) or type(exc).__name__
        raise ValueError(f"neither JSON nor a Python literal ({reason})") from None


def _names(value: Any) -> tuple[str, ...]:
    """{0: 'person', 1: 'car'} (keys int or digit strings; gaps become "class N") or a list."""
    if isinstance(value, str):
        value = _literal(value)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    if not isinstance(value, dict):
        raise ValueError(f"names: expected a dict of id: name or a list, got {type(value).__name__}")
    by_id: dict[int, str] = {}
    for key, name in value.items():
        try:
            index = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"names: key {key!r} is not a class id") from None
        if not 0 <= index < 100_000:
            raise ValueError(f"names: class id {index} out of range")
        by_id[index] = str(name)
    if not by_id:
        return ()
    return tuple(by_id.get(i, f"class {i}") for i in range(max(by_id) + 1))


def _imgsz(value: Any) -> tuple[int, int]:
    """640 or [H, W] (Ultralytics writes [H, W])."""
    if isinstance(value, str):
        value = _literal(value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 16384 for v in value)
    ):
        raise ValueError(f"imgsz: expected a size or [H, W] of positive integers, got {value!r}")
    return int(value[0]), int(value[1])


def _stride(value: Any) -> int:
    if isinstance(value, str):
        value = _literal(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1024:
        raise ValueError(f"stride: expected a positive integer, got {value!r}")
    return value


def _task(value: Any) -> Task:
    text = str(value).strip().lower()
    if text not in _TASKS:
        raise ValueError(f"task {value!r}: the app decodes {', '.join(_TASKS)} exports")
    return _TASKS[text]


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"end2end: expected True or False, got {value!r}")
    return text == "true"


_FIELDS = {
    "end2end": _flag,
    "names": _names,
    "imgsz": _imgsz,
    "stride": _stride,
    "task": _task,
    "kpt_shape": parse_kpt_shape,
}


def metadata_from_mapping(raw: Mapping[str, Any], source: str) -> ExportMetadata:
    """The entries of an exporter's metadata dict (values as they are, or their str() as an
    ONNX file keeps them); ProfileError naming `source` and the entry when one is malformed
    (they decide how the model is fed and read)."""
    found: dict[str, Any] = {}
    for key, parse in _FIELDS.items():
        value = raw.get(key)
        if value is None:
            continue
        try:
            if key == "kpt_shape" and isinstance(value, str) and value.strip() in ("None", ""):
                continue
            found[key] = parse(value)
        except (ValueError, TypeError) as exc:
            raise ProfileError(f"{source}: {exc}") from None
    return ExportMetadata(source, **found)


def parse_metadata_text(text: str, source: str) -> ExportMetadata:
    """The metadata parameter's text (a dict repr or JSON) -> its entries; ProfileError
    naming `source` when it is not a dict."""
    try:
        raw = _literal(text)
    except ValueError as exc:
        raise ProfileError(f"{source}: {exc}") from None
    if not isinstance(raw, dict):
        example = "{'names': {0: 'person'}, 'imgsz': [640, 640]}"
        raise ProfileError(f"{source}: expected a dict such as {example}, got {type(raw).__name__}")
    return metadata_from_mapping(raw, source)


def config_metadata(config: Mapping[str, Any]) -> ExportMetadata | None:
    """The `metadata` entry of a model config's `parameters` (as tritonclient's as_json gives
    it), or None when there is none. ProfileError naming the model when it is malformed."""
    cfg = config.get("config", config)
    entry = (cfg.get("parameters") or {}).get(METADATA_PARAMETER)
    if entry is None:
        return None
    text = entry.get("string_value", "") if isinstance(entry, dict) else str(entry)
    if not str(text).strip():
        return None
    return parse_metadata_text(str(text), f"model {cfg.get('name') or '?'}: config parameter metadata")


def onnx_file_metadata(path: str | Path) -> ExportMetadata | None:
    """An ONNX file's `metadata_props` (read with onnxruntime, which parses the file anyway
    to run it); None when onnxruntime is not installed or the file has none. ProfileError
    naming the file when it cannot be read as a model."""
    try:
        import onnxruntime  # type: ignore[import-untyped,unused-ignore]  # optional; imported when a file is at hand
    except ImportError:
        return None
    p = Path(path)
    try:
        session = onnxruntime.InferenceSession(str(p), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types (Fail, InvalidGraph...)
        raise ProfileError(f"model file {p}: cannot read it as an ONNX model ({exc})") from None
    props = dict(session.get_modelmeta().custom_metadata_map)
    return metadata_from_mapping(props, f"model file {p}: metadata_props") if props else None
