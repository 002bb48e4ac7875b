"""Set-prediction detectors (no NMS): the DETR family and torchvision-style outputs.

- DETR family, two outputs: boxes `[N, Q, 4]` normalised cx, cy, w, h of the model input and
  class scores `[N, Q, C]`. RT-DETR / D-FINE (sigmoid over each class, the top-K of all
  query x class scores, as their postprocessors with `use_focal_loss`) or DETR (softmax over
  C + 1 classes whose last is "no object", then the best real class per query).
- Ultralytics' RT-DETR export, one output `[N, 300, 6]`: cx, cy, w, h normalised, score, class
  (already its top-K; RTDETRPredictor keeps rows with score > conf).
- torchvision-style (and RT-DETR/D-FINE's deploy exports): `boxes` [K, 4] x1, y1, x2, y2 in
  model-input pixels, `labels` [K], `scores` [K]; K varies from image to image.
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.decoders import Decoded, class_ids, drop_batch, empty


def _xyxy(cxcywh: np.ndarray) -> np.ndarray:
    half = cxcywh[:, 2:4] / 2
    return np.concatenate([cxcywh[:, :2] - half, cxcywh[:, :2] + half], axis=1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def decode_detr(
    boxes: np.ndarray, logits: np.ndarray, activation: str, score_threshold: float, max_detections: int = 300
) -> Decoded:
    """Normalised xyxy boxes (0..1 of the input), scores, classes; best first."""
    b = drop_batch("DETR boxes", boxes, 2).astype(np.float32)
    lg = drop_batch("DETR logits", logits, 2).astype(np.float32)
    if b.shape[1] != 4 or len(b) != len(lg):
        raise ValueError(
            f"DETR outputs: boxes {list(np.shape(boxes))} and logits {list(np.shape(logits))} differ"
        )
    with np.errstate(over="ignore"):
        if activation == "softmax":
            e = np.exp(lg - lg.max(axis=1, keepdims=True))
            prob = (e / e.sum(axis=1, keepdims=True))[:, :-1]  # the last class is "no object"
            classes = prob.argmax(axis=1)
            query = np.arange(len(prob))
            scores = prob[query, classes]
        else:
            flat = _sigmoid(lg).reshape(-1)
            top = np.argsort(-flat, kind="stable")[: min(max_detections, flat.size)]
            query, classes = np.divmod(top, lg.shape[1])
            scores = flat[top]
    order = np.argsort(-scores, kind="stable")
    order = order[scores[order] > score_threshold][: max(max_detections, 0)]
    if not order.size:
        return empty()
    return (
        np.ascontiguousarray(_xyxy(b[query[order]]), np.float32),
        np.ascontiguousarray(scores[order], np.float32),
        classes[order].astype(np.int64),
    )


def decode_rtdetr_ultralytics(
    output: np.ndarray, score_threshold: float, max_detections: int = 300
) -> Decoded:
    """Ultralytics' RT-DETR export [Q, 6] -> normalised xyxy boxes, scores, classes."""
    rows = drop_batch("RT-DETR output", output, 2).astype(np.float32)
    if rows.shape[1] != 6:
        raise ValueError(f"RT-DETR output {list(np.shape(output))}: rows need 6 values")
    kept = np.flatnonzero(rows[:, 4] > score_threshold)[:max_detections]
    return _xyxy(rows[kept, :4]).astype(np.float32), rows[kept, 4], class_ids(rows[kept, 5])


def decode_torchvision(
    boxes: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    score_threshold: float,
    max_detections: int = 300,
) -> Decoded:
    """torchvision-style [K, 4] / [K] / [K] (K may be 0) -> kept rows, best first."""
    b = drop_batch("boxes", np.asarray(boxes).reshape(-1, 4) if np.size(boxes) == 0 else boxes, 2)
    lab = np.asarray(labels).reshape(-1)
    sc = np.asarray(scores, np.float32).reshape(-1)
    if not (len(b) == len(lab) == len(sc)):
        raise ValueError(f"boxes {list(np.shape(boxes))}, labels {list(np.shape(labels))} and scores "
                         f"{list(np.shape(scores))} disagree on the number of detections")  # fmt: skip
    keep = np.flatnonzero(sc > score_threshold)
    keep = keep[np.argsort(-sc[keep], kind="stable")][:max_detections]
    return b[keep].astype(np.float32), sc[keep], class_ids(lab[keep])
