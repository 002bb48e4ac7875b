"""NMS against a brute-force reference."""

import numpy as np
import pytest

from app.inference.decoding.nms import batched_nms, box_iou, nms, ultralytics_nms


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _reference(boxes, scores, classes, thr, limit):
    """Textbook greedy NMS, one pair at a time."""
    order = sorted(range(len(boxes)), key=lambda i: (-scores[i], i))
    keep: list[int] = []
    for i in order:
        if all(
            not (classes is None or classes[i] == classes[k]) or _iou(boxes[i], boxes[k]) <= thr for k in keep
        ):
            keep.append(i)
    return keep[:limit]


def _random_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    xy = rng.uniform(0, 600, (n, 2))
    wh = rng.uniform(5, 120, (n, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("thr", [0.3, 0.45, 0.7])
def test_nms_matches_reference(seed: int, thr: float) -> None:
    rng = np.random.default_rng(seed)
    boxes = _random_boxes(rng, 200)
    scores = rng.uniform(0, 1, 200).astype(np.float32)
    got = nms(boxes, scores, thr)
    assert got.tolist() == _reference(boxes, scores, None, thr, 10**9)


@pytest.mark.parametrize("seed", range(8))
def test_batched_nms_matches_per_class_reference(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    boxes = _random_boxes(rng, 300)
    scores = rng.uniform(0, 1, 300).astype(np.float32)
    classes = rng.integers(0, 5, 300)
    got = batched_nms(boxes, scores, classes, 0.45)
    assert got.tolist() == _reference(boxes, scores, classes, 0.45, 10**9)


def test_classes_do_not_suppress_each_other_and_topk() -> None:
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [1, 0, 11, 10]], np.float32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    assert nms(boxes, scores, 0.5).tolist() == [0]
    assert batched_nms(boxes, scores, np.array([0, 1, 1]), 0.5).tolist() == [0, 1]
    assert batched_nms(boxes, scores, np.array([0, 1, 2]), 0.5, max_detections=2).tolist() == [0, 1]


def test_iou_edge_cases() -> None:
    assert box_iou(np.array([0, 0, 10, 10]), np.array([[10, 0, 20, 10]])).tolist() == [0.0]
    assert box_iou(np.array([0, 0, 0, 0]), np.array([[0, 0, 0, 0]])).tolist() == [0.0]
    assert box_iou(np.array([0, 0, 10, 10]), np.array([[0, 0, 10, 5]]))[0] == pytest.approx(0.5)


def test_empty_and_mismatched() -> None:
    assert nms(np.zeros((0, 4)), np.zeros(0), 0.5).tolist() == []
    assert batched_nms(np.zeros((0, 4)), np.zeros(0), np.zeros(0), 0.5).tolist() == []
    with pytest.raises(ValueError, match="2 boxes but 1 scores"):
        nms(np.zeros((2, 4)), np.zeros(1), 0.5)


def test_ultralytics_nms_decides_in_float32_as_ultralytics_does() -> None:
    # Two boxes whose IoU is 0.9 to within float32's rounding: torchvision 0.29's nms (the
    # Ultralytics reference venv, with and without the class offset of 70 x 7680) drops the
    # second; exact float64 arithmetic keeps both.
    boxes = np.array([[10, 10, 60, 60], [12.631578, 10, 62.63158, 60]], np.float32)
    scores = np.array([0.9, 0.8], np.float32)
    for cls in (0, 70):
        classes = np.array([cls, cls])
        assert ultralytics_nms(boxes, scores, classes, 0.9).tolist() == [0]
        assert batched_nms(boxes, scores, classes, 0.9).tolist() == [0, 1]
    # Other classes never suppress each other; the cap holds.
    assert ultralytics_nms(boxes, scores, np.array([1, 2]), 0.9).tolist() == [0, 1]
    assert ultralytics_nms(boxes, scores, np.array([1, 2]), 0.9, max_detections=1).tolist() == [0]
