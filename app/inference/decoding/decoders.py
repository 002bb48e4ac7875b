"""Turning a detection model's output tensors into boxes, scores and class ids.

Every decoder returns `(boxes, scores, class_ids)`: boxes (N, 4) float32 x1, y1, x2, y2 in
MODEL-INPUT pixels (except `decode_efficientnms` on a model that already answers in original
pixels: its boxes are passed through as given), scores (N,) float32, class_ids (N,) int64,
best score first, after the score threshold (and NMS for the raw YOLO formats).
Only one image per request: a leading batch dimension must be 1.
"""

from __future__ import annotations

import numpy as np

from app.inference.decoding.nms import ultralytics_nms

Decoded = tuple[np.ndarray, np.ndarray, np.ndarray]


def empty() -> Decoded:
    return np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64)


def drop_batch(name: str, array: np.ndarray, rank: int) -> np.ndarray:
    """Remove leading batch dims of 1 until `array` has `rank` dims."""
    a = np.asarray(array)
    while a.ndim > rank:
        if a.shape[0] != 1:
            raise ValueError(f"{name}: expected one image per request (leading dim 1), got shape {a.shape}")
        a = a[0]
    if a.ndim != rank:
        raise ValueError(f"{name}: expected {rank} dims (plus an optional batch dim of 1), got {a.shape}")
    return a


def _count(name: str, num: np.ndarray, available: int) -> int:
    flat = np.asarray(num).reshape(-1)
    if flat.size != 1:
        raise ValueError(f"{name}: expected a single count for one image, got shape {np.shape(num)}")
    return int(np.clip(int(flat[0]), 0, available))


def class_ids(values: np.ndarray) -> np.ndarray:
    """Class ids as int64; a float id that is NaN, infinite or out of range becomes -1 (no
    class: dropped and counted downstream), never a cast warning or a wrapped-around number."""
    a = np.asarray(values)
    if not np.issubdtype(a.dtype, np.floating):
        return a.astype(np.int64)
    f = a.astype(np.float64)
    bad = ~np.isfinite(f) | (np.abs(f) > 2**31)
    return np.rint(np.where(bad, -1.0, f)).astype(np.int64)


def _sorted(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, max_detections: int) -> Decoded:
    order = np.argsort(-scores, kind="stable")[: max(max_detections, 0)]
    return (
        np.ascontiguousarray(boxes[order], dtype=np.float32),
        np.ascontiguousarray(scores[order], dtype=np.float32),
        class_ids(np.ascontiguousarray(classes[order])),
    )


def decode_efficientnms(
    num_dets: np.ndarray,
    det_boxes: np.ndarray,
    det_scores: np.ndarray,
    det_classes: np.ndarray,
    score_threshold: float,
    max_detections: int = 300,
) -> Decoded:
    """TensorRT EfficientNMS style: num_dets [B,1]|[1], det_boxes [B,K,4] x1,y1,x2,y2,
    det_scores [B,K], det_classes [B,K]; only the first num_dets rows count."""
    return select_efficientnms(num_dets, det_boxes, det_scores, det_classes, score_threshold, max_detections)[
        0
    ]


def select_efficientnms(
    num_dets: np.ndarray,
    det_boxes: np.ndarray,
    det_scores: np.ndarray,
    det_classes: np.ndarray,
    score_threshold: float,
    max_detections: int = 300,
) -> tuple[Decoded, np.ndarray]:
    """`decode_efficientnms` and the rows kept, in the same order (to pick each detection's
    row of an extra output such as keypoints)."""
    boxes = drop_batch("det_boxes", det_boxes, 2)
    scores = drop_batch("det_scores", det_scores, 1)
    classes = drop_batch("det_classes", det_classes, 1)
    n = _count("num_dets", num_dets, min(len(boxes), len(scores), len(classes)))
    scores = scores[:n].astype(np.float32)
    rows = np.flatnonzero(scores >= score_threshold)
    rows = rows[np.argsort(-scores[rows], kind="stable")[: max(max_detections, 0)]]
    decoded = (
        np.ascontiguousarray(boxes[rows], dtype=np.float32),
        np.ascontiguousarray(scores[rows], dtype=np.float32),
        class_ids(classes[rows]),
    )
    return decoded, rows


def decode_tfod(
    num_detections: np.ndarray,
    detection_boxes: np.ndarray,
    detection_scores: np.ndarray,
    detection_classes: np.ndarray,
    score_threshold: float,
    input_w: int,
    input_h: int,
    max_detections: int = 300,
) -> Decoded:
    """TF Object Detection API: boxes normalised ymin, xmin, ymax, xmax (of the model input);
    classes are floats, kept as given (often 1-based: the label list decides)."""
    boxes = drop_batch("detection_boxes", detection_boxes, 2).astype(np.float32)
    scores = drop_batch("detection_scores", detection_scores, 1).astype(np.float32)
    classes = drop_batch("detection_classes", detection_classes, 1)
    n = _count("num_detections", num_detections, min(len(boxes), len(scores), len(classes)))
    boxes, scores, classes = boxes[:n], scores[:n], classes[:n]
    keep = scores >= score_threshold
    boxes = boxes[keep]
    xyxy = np.stack(
        [boxes[:, 1] * input_w, boxes[:, 0] * input_h, boxes[:, 3] * input_w, boxes[:, 2] * input_h], axis=1
    )
    return _sorted(xyxy, scores[keep], classes[keep], max_detections)


def _xywh_to_xyxy(xywh: np.ndarray) -> np.ndarray:
    half = xywh[:, 2:4] / 2
    return np.concatenate([xywh[:, 0:2] - half, xywh[:, 0:2] + half], axis=1)


def _nms_candidates(
    xywh: np.ndarray,
    scores: np.ndarray,
    classes: np.ndarray,
    iou_threshold: float,
    max_detections: int,
) -> Decoded:
    boxes = _xywh_to_xyxy(xywh.astype(np.float32))
    keep = ultralytics_nms(boxes, scores, classes, iou_threshold, max_detections)
    return (
        np.ascontiguousarray(boxes[keep], dtype=np.float32),
        scores[keep].astype(np.float32),
        classes[keep].astype(np.int64),
    )


def decode_yolov5(
    output: np.ndarray,
    score_threshold: float,
    iou_threshold: float,
    max_detections: int = 300,
) -> Decoded:
    """Raw YOLOv5 rows [N, 5 + C] (cx, cy, w, h, objectness, class scores); score = obj * cls."""
    rows = drop_batch("YOLOv5 output", output, 2)
    if rows.shape[1] < 6:
        raise ValueError(f"YOLOv5 output: rows need 5 + classes values, got shape {rows.shape}")
    obj = rows[:, 4].astype(np.float32)
    # Pre-filter on objectness first: obj * cls <= obj, so nothing above threshold is lost.
    rows = rows[obj >= score_threshold]
    if not len(rows):
        return empty()
    cls_scores = rows[:, 5:].astype(np.float32) * rows[:, 4:5].astype(np.float32)
    classes = cls_scores.argmax(axis=1)
    scores = cls_scores[np.arange(len(rows)), classes]
    keep = scores >= score_threshold
    return _nms_candidates(rows[keep, :4], scores[keep], classes[keep], iou_threshold, max_detections)


def yolov8_rows(output: np.ndarray, num_classes: int | None = None) -> np.ndarray:
    """A raw YOLOv8/YOLO11 output as [4 + C, N] (channels first, the Ultralytics export).

    The transposed [N, 4 + C] is accepted only when unambiguous: `num_classes` known and
    exactly one axis equal to 4 + num_classes; without it, only the smaller axis can be the
    channel axis (there are always far more candidates than classes)."""
    a = drop_batch("YOLOv8 output", output, 2)
    rows, cols = a.shape
    if num_classes is not None:
        want = 4 + num_classes
        if rows == want:
            return a
        if cols == want:
            return a.T
        raise ValueError(f"YOLOv8 output: shape {a.shape} has no axis of 4 + {num_classes} classes = {want}")
    if rows < 5 and cols < 5:
        raise ValueError(f"YOLOv8 output: shape {a.shape} is too small for 4 + classes values")
    if rows == cols:
        raise ValueError(
            f"YOLOv8 output: shape {a.shape} is ambiguous (square): give the class count in a profile"
        )
    return a if rows < cols else a.T


def decode_yolov8(
    output: np.ndarray,
    score_threshold: float,
    iou_threshold: float,
    max_detections: int = 300,
    num_classes: int | None = None,
) -> Decoded:
    """Raw YOLOv8/YOLO11 [4 + C, N] (cx, cy, w, h, class scores), see `yolov8_rows`."""
    a = yolov8_rows(output, num_classes)
    return select_yolov8(a, a.shape[0] - 4, score_threshold, iou_threshold, max_detections)[0]


def select_yolov8(
    rows: np.ndarray,
    num_classes: int,
    score_threshold: float,
    iou_threshold: float,
    max_detections: int = 300,
) -> tuple[Decoded, np.ndarray]:
    """Channels-first [4 + C + E, N] (box, C class scores, E extra values per candidate such
    as keypoints or mask coefficients) -> the decoded boxes and the candidate columns kept
    (to pick the extras of each detection)."""
    cls = rows[4 : 4 + num_classes]
    # Pre-filter before anything else: max over classes then one comparison, ~1 ms for 84x8400.
    best = cls.max(axis=0)
    idx = np.flatnonzero(best >= score_threshold)
    if not idx.size:
        return empty(), np.zeros(0, np.int64)
    classes = cls[:, idx].argmax(axis=0)
    scores = best[idx].astype(np.float32)
    boxes = _xywh_to_xyxy(rows[:4, idx].T.astype(np.float32))
    keep = ultralytics_nms(boxes, scores, classes, iou_threshold, max_detections)
    decoded = (
        np.ascontiguousarray(boxes[keep], dtype=np.float32),
        scores[keep].astype(np.float32),
        classes[keep].astype(np.int64),
    )
    return decoded, idx[keep]
