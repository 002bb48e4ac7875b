"""A JSONL record (InferenceResult.to_record, ../DESIGN.md) read back as an InferenceResult:
a resumed `evaluate` scores the images an earlier run answered from the records it wrote.
What a record does not carry (timing, the tag) stays empty; ValueError for a record that is
not one."""

from __future__ import annotations

from typing import Any

from app.inference.masks import BinaryMask, decode_rle
from app.inference.result import ClassScore, Detection, ErrorKind, InferenceResult, SemanticMask, Status


def _mask(rle: Any) -> BinaryMask | None:
    return None if rle is None else BinaryMask.from_full(decode_rle(rle))


def _semantic(m: dict[str, Any]) -> SemanticMask:
    mask = _mask(m["mask"])
    if mask is None:
        raise ValueError("a class's entry without its mask")
    return SemanticMask(int(m["class_id"]), str(m["label"]), mask)


def _detection(d: dict[str, Any]) -> Detection:
    x1, y1, x2, y2 = (float(v) for v in d["box"])
    keypoints = d.get("keypoints")
    return Detection(
        box=(x1, y1, x2, y2),
        score=float(d["score"]),
        class_id=int(d["class_id"]),
        label=str(d.get("label", "")),
        keypoints=None
        if keypoints is None
        else tuple((float(x), float(y), float(s)) for x, y, s in keypoints),
        mask=_mask(d.get("mask")),
        track_id=d.get("track_id"),
    )


def result_from_record(record: dict[str, Any]) -> InferenceResult:
    try:
        masks = record.get("masks")
        classes = record.get("classes")
        kind = record.get("error_kind")
        return InferenceResult(
            request_id=record.get("request_id"),
            status=Status(record["status"]),
            source=record.get("source"),
            frame=record.get("frame"),
            error=record.get("error"),
            latency_ms=record.get("latency_ms"),
            width=record.get("width"),
            height=record.get("height"),
            detections=[_detection(d) for d in record.get("detections") or []],
            masks=None if masks is None else [_semantic(m) for m in masks],
            classes=None
            if classes is None
            else [ClassScore(int(c["class_id"]), str(c["label"]), float(c["score"])) for c in classes],
            model=record.get("model"),
            error_kind=None if kind is None else ErrorKind(kind),
            dropped_invalid=int(record.get("dropped_invalid", 0)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a record of one input ({type(e).__name__}: {e})") from None
