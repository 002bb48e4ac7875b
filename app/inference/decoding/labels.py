"""Class names: the COCO list, label files, the model config's `labels` parameter."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from app.system.bounded_read import MAX_SMALL_FILE_BYTES, BoundedReadError, read_text

# Ultralytics / YOLO order (0-based, 80 classes).
COCO_NAMES: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip


def parse_labels_text(text: str) -> tuple[str, ...]:
    """Names separated by newlines or commas; surrounding spaces and blank entries dropped."""
    return tuple(name for name in (part.strip() for part in re.split(r"[,\r\n]", text)) if name)


def read_labels_file(path: str | Path) -> tuple[str, ...]:
    """One name per line, the line's position its class id: a blank line is an empty name at
    its index (`blank_label_ids` finds them, for a warning), so the later classes keep their
    ids. Lines end at "\n" or "\r\n" only: \x0b, \x0c or U+2028 inside a line are part of the
    name (Python's splitlines would cut there). Blank lines after the last name are not classes.
    Commas are part of a name here; spaces and tabs around a name are dropped."""
    p = Path(path)
    try:
        text = read_text(p, MAX_SMALL_FILE_BYTES, f"labels file {p}", "utf-8-sig")
    except BoundedReadError as exc:
        raise ValueError(str(exc)) from None
    names = [line.strip(" \t\r") for line in text.split("\n")]
    while names and not names[-1]:
        names.pop()
    if not names:
        raise ValueError(f"labels file {p}: no names in it (one name per line expected)")
    return tuple(names)


def blank_label_ids(names: Sequence[str]) -> list[int]:
    """The class ids that have an empty name (blank lines of a labels file)."""
    return [i for i, name in enumerate(names) if not name]


def config_labels(config: dict) -> tuple[str, ...]:
    """The `labels` entry of a model config's `parameters` (as tritonclient's as_json gives it)."""
    cfg = config.get("config", config)
    params = cfg.get("parameters") or {}
    entry = params.get("labels")
    if entry is None:
        return ()
    value = entry.get("string_value", "") if isinstance(entry, dict) else str(entry)
    return parse_labels_text(value)


def resolve_labels(
    explicit: Sequence[str] | None = None,
    from_config: Sequence[str] | None = None,
    raw_yolo_classes: int | None = None,
) -> tuple[str, ...]:
    """First found wins: explicit (labels file / profile file), the config's `labels`
    parameter, COCO when a raw YOLO output has 80 classes; else () meaning "class N"."""
    if explicit:
        return tuple(explicit)
    if from_config:
        return tuple(from_config)
    if raw_yolo_classes == len(COCO_NAMES):
        return COCO_NAMES
    return ()


def label_name(labels: Sequence[str], class_id: int) -> str:
    """The class's name; "class N" for one without a name (beyond the list, or left blank)."""
    if 0 <= class_id < len(labels) and labels[class_id]:
        return labels[class_id]
    return f"class {class_id}"
