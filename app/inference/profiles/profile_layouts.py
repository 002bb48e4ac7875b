"""Telling the export layouts beyond YOLOv5/v8 raw, EfficientNMS and TF OD from a model's
outputs (names, shapes) and its exporter's metadata; used by profile_detect.py. Each `Found`
carries the reason it was recognised (`layout_reason`, printed by `models`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.inference.decoding.decode_grids import STRIDES
from app.inference.profile_kinds import BoxesIn, OutputFormat, Preprocess, Task
from app.inference.profiles.export_metadata import ExportMetadata
from app.inference.profiles.profile_tasks import Found, Tensor, core_shape

F = OutputFormat
MAX_QUERIES = 1000  # an end-to-end / DETR output's rows (300 for Ultralytics)
SCRFD_KEYPOINTS = ("left_eye", "right_eye", "nose", "mouth_left", "mouth_right")


def _found(fmt: OutputFormat, names: tuple[str, ...], reason: str, **fields: Any) -> Found:
    return Found(fmt, names, None, {"layout_reason": reason, **fields})


def end2end_output(
    outputs: Sequence[Tensor],
    batched: bool,
    export: ExportMetadata | None,
    wanted: Task | None,
    kpt_shape: tuple[int, int] | None,
) -> Found | None:
    """YOLOv10 / YOLO26 NMS-free `[K, 6 + E]` (+ prototypes for segment)."""
    told = export is not None and export.end2end is True
    if export is not None and export.end2end is False:
        return None
    why = "metadata end2end" if told else "shape"
    rows = [t for t in outputs if len(core_shape(t, batched, 2)) == 2]
    protos = [t for t in outputs if len(core_shape(t, batched, 3)) == 3]
    for t in rows:
        q, d = core_shape(t, batched, 2)
        if not told and not 1 <= q <= MAX_QUERIES:
            continue
        reason = f"end-to-end (NMS-free) {t.name} [{q}, {d}] ({why})"
        if wanted is Task.OBB and d == 7:
            return _found(F.END2END, (t.name,), reason + ": x, y, w, h, score, class, angle", task=Task.OBB)
        shape = kpt_shape or ((17, 3) if d == 57 and wanted in (None, Task.POSE) else None)
        if shape is not None and d == 6 + shape[0] * shape[1]:
            return _found(F.END2END, (t.name,), reason + f": boxes + {shape[0]}x{shape[1]} keypoints",
                          task=Task.POSE, kpt_shape=shape)  # fmt: skip
        for p in protos:
            if p.name != t.name and d == 6 + core_shape(p, batched, 3)[0]:
                return _found(
                    F.END2END, (t.name, p.name), reason + f" + prototypes {p.name}", task=Task.SEGMENT
                )
        if d == 6 and wanted in (None, Task.DETECT):
            return _found(F.END2END, (t.name,), reason + ": x1, y1, x2, y2, score, class")
    return None


def rtdetr_output(outputs: Sequence[Tensor], batched: bool, export: ExportMetadata | None) -> Found | None:
    """Ultralytics' RT-DETR export: its metadata says end2end False, one `[Q, 6]` output."""
    if export is None or not export.is_ultralytics or export.end2end is not False or len(outputs) != 1:
        return None
    t = outputs[0]
    dims = core_shape(t, batched, 2)
    if len(dims) == 2 and dims[1] == 6:
        reason = (
            f"Ultralytics RT-DETR {t.name} {list(dims)} (metadata end2end False): "
            "normalised cx, cy, w, h, score, class"
        )
        return _found(F.RTDETR, (t.name,), reason, boxes_in=BoxesIn.NORMALIZED, preprocess=Preprocess.RESIZE,
                      pad_value=0.0)  # fmt: skip
    return None


def _by_name(outputs: Sequence[Tensor], *names: str) -> Tensor | None:
    for t in outputs:
        if t.name.lower() in names:
            return t
    return None


def set_outputs(outputs: Sequence[Tensor], batched: bool, n_labels: int) -> Found | None:
    """torchvision-style `boxes`/`labels`/`scores`, or DETR-family boxes + logits."""
    boxes = _by_name(outputs, "boxes", "pred_boxes", "bboxes")
    if boxes is None or core_shape(boxes, batched, 2)[-1:] != (4,):
        return None
    labels = _by_name(outputs, "labels", "classes")
    scores = _by_name(outputs, "scores", "logits", "pred_logits")
    if labels is not None and scores is not None:
        reason = f"torchvision-style outputs {boxes.name}, {labels.name}, {scores.name}"
        return _found(F.TORCHVISION, (boxes.name, labels.name, scores.name), reason)
    if scores is None:
        return None
    dims = core_shape(scores, batched, 2)
    if len(dims) != 2 or dims[1] < 1:
        return None
    classes = dims[1]
    softmax = classes == n_labels + 1 or (not n_labels and classes == 92)
    activation = "softmax" if softmax else "sigmoid"
    why = "DETR: C + 1 with no-object last" if softmax else "RT-DETR / D-FINE"
    reason = (
        f"DETR family {boxes.name} [Q, 4] normalised cxcywh + {scores.name} [Q, {classes}] "
        f"({activation}, {why})"
    )
    return _found(F.DETR, (boxes.name, scores.name), reason, boxes_in=BoxesIn.NORMALIZED,
                  preprocess=Preprocess.RESIZE, pad_value=0.0, score_activation=activation)  # fmt: skip


def _cells(size: tuple[int, int], stride: int) -> int:
    return (size[0] // stride) * (size[1] // stride)


def scrfd_outputs(outputs: Sequence[Tensor], size: tuple[int, int] | None) -> Found | None:
    """SCRFD / RetinaFace-style: per stride scores [n, 1], distances [n, 4], keypoints [n, 10]
    (named score_8 ... or told by their row counts: 2 anchors per cell of 8, 16, 32)."""
    named = [_by_name(outputs, f"{kind}_{s}") for kind in ("score", "bbox", "kps") for s in STRIDES]
    if all(t is not None for t in named[:6]):
        chosen = [t.name for t in named if t is not None]
        why = "outputs named score_/bbox_/kps_ per stride"
    else:
        if size is None or len(outputs) not in (6, 9):
            return None
        groups: dict[int, list[Tensor]] = {}
        for t in outputs:
            groups.setdefault(t.shape[-1] if t.shape else 0, []).append(t)
        if sorted(groups) != ([1, 4, 10] if len(outputs) == 9 else [1, 4]) or any(
            len(g) != 3 for g in groups.values()
        ):
            return None
        chosen = []
        for last in sorted(groups, key=lambda k: (1, 4, 10).index(k)):
            ordered = sorted(groups[last], key=lambda t: -max(t.shape[-2] if len(t.shape) > 1 else 0, 0))
            for t, s in zip(ordered, STRIDES, strict=True):
                if len(t.shape) < 2 or t.shape[-2] not in (_cells(size, s), 2 * _cells(size, s)):
                    return None
            chosen += [t.name for t in ordered]
        why = "row counts of 2 anchors per cell at strides 8, 16, 32"
    pose = len(chosen) == 9
    reason = f"SCRFD / RetinaFace face detector ({why})" + ("; 5 keypoints per face" if pose else "")
    fields: dict[str, Any] = {"preprocess": Preprocess.LETTERBOX_INSIGHTFACE, "pad_value": 0.0, "scale": 1.0,
                              "mean": (127.5,) * 3, "std": (128.0,) * 3, "score_threshold": 0.5,
                              "iou_threshold": 0.4}  # fmt: skip
    if pose:
        fields.update(task=Task.POSE, kpt_shape=(5, 2), keypoint_names=SCRFD_KEYPOINTS, skeleton=())
    return _found(F.SCRFD, tuple(chosen), reason, **fields)


def yolox_output(
    outputs: Sequence[Tensor], batched: bool, size: tuple[int, int] | None, n_labels: int
) -> Found | None:
    """Raw YOLOX `[A, 5 + C]`: A = one cell per grid position over strides 8, 16, 32 (YOLOv5
    has 3 anchors per cell) and the labels count telling 5 + C from YOLOv8's 4 + C."""
    if size is None or not n_labels:
        return None
    anchors = sum(_cells(size, s) for s in STRIDES)
    for t in outputs:
        dims = core_shape(t, batched, 2)
        if len(dims) == 2 and dims[0] == anchors and dims[1] == 5 + n_labels:
            reason = (
                f"YOLOX raw {t.name} [{anchors}, 5 + {n_labels}]: one cell per grid position of a "
                f"{size[1]}x{size[0]} input, 5 + the labels' count"
            )
            return Found(F.YOLOX, (t.name,), n_labels, {"layout_reason": reason})
    return None
