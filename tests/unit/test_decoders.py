"""Decoders on hand-built tensors whose answers follow from their construction."""

import numpy as np
import pytest

from app.inference.decoding.decoders import (
    decode_efficientnms,
    decode_tfod,
    decode_yolov5,
    decode_yolov8,
    yolov8_rows,
)

# Two well separated objects (cx, cy, w, h) and their x1, y1, x2, y2.
OBJ_A = (200.0, 250.0, 200.0, 200.0)
BOX_A = [100.0, 150.0, 300.0, 350.0]
OBJ_B = (500.0, 350.0, 200.0, 300.0)
BOX_B = [400.0, 200.0, 600.0, 500.0]


def _efficientnms(batch: bool):
    num = np.array([[3]]) if batch else np.array([3])
    boxes = np.zeros((1, 10, 4), np.float32)
    boxes[0, :4] = [BOX_A, BOX_B, [1, 1, 2, 2], [0, 0, 640, 640]]
    scores = np.zeros((1, 10), np.float32)
    scores[0, :4] = [0.9, 0.8, 0.1, 0.99]  # row 3 is past num_dets: must be ignored
    classes = np.zeros((1, 10), np.int32)
    classes[0, :4] = [0, 2, 1, 5]
    if not batch:
        return num, boxes[0], scores[0], classes[0]
    return num, boxes, scores, classes


@pytest.mark.parametrize("batch", [True, False])
def test_efficientnms_counts_and_threshold(batch: bool) -> None:
    boxes, scores, classes = decode_efficientnms(*_efficientnms(batch), score_threshold=0.25)
    assert boxes.tolist() == [BOX_A, BOX_B]
    assert scores.tolist() == pytest.approx([0.9, 0.8])
    assert classes.tolist() == [0, 2] and classes.dtype == np.int64 and boxes.dtype == np.float32
    boxes, _, _ = decode_efficientnms(*_efficientnms(batch), score_threshold=0.05)
    assert len(boxes) == 3


def test_efficientnms_rejects_batch_of_two() -> None:
    num, boxes, scores, classes = _efficientnms(True)
    with pytest.raises(ValueError, match=r"det_boxes.*one image"):
        decode_efficientnms(num, np.concatenate([boxes, boxes]), scores, classes, 0.25)


def test_tfod_normalised_yxyx_to_input_pixels() -> None:
    boxes = np.zeros((1, 100, 4), np.float32)
    boxes[0, :2] = [[0.1, 0.2, 0.5, 0.6], [0.25, 0.5, 0.75, 1.0]]
    scores = np.zeros((1, 100), np.float32)
    scores[0, :2] = [0.95, 0.7]
    classes = np.zeros((1, 100), np.float32)
    classes[0, :2] = [1.0, 3.0]
    out_boxes, out_scores, out_classes = decode_tfod(
        np.array([2.0], np.float32), boxes, scores, classes, 0.5, input_w=300, input_h=200
    )
    # x from xmin/xmax * width, y from ymin/ymax * height.
    np.testing.assert_allclose(out_boxes, [[60, 20, 180, 100], [150, 50, 300, 150]], atol=1e-4)
    assert out_classes.tolist() == [1, 3]  # 1-based ids kept as given
    assert out_scores.tolist() == pytest.approx([0.95, 0.7])


def _yolov5(n: int = 300, classes: int = 80) -> np.ndarray:
    out = np.zeros((1, n, 5 + classes), np.float32)
    out[0, 10, :5] = (*OBJ_A, 1.0)
    out[0, 10, 5 + 0] = 0.875
    out[0, 11, :5] = (OBJ_A[0] + 4, *OBJ_A[1:], 1.0)  # IoU 0.96 with row 10, lower score
    out[0, 11, 5 + 0] = 0.75
    out[0, 12, :5] = (OBJ_A[0] + 4, *OBJ_A[1:], 1.0)  # same place, another class: kept
    out[0, 12, 5 + 7] = 0.5
    out[0, 200, :5] = (*OBJ_B, 0.5)
    out[0, 200, 5 + 2] = 0.8  # score 0.5 * 0.8 = 0.4
    out[0, 201, :5] = (*OBJ_B, 0.2)  # objectness below threshold
    out[0, 201, 5 + 3] = 1.0
    out[0, 202, :5] = (*OBJ_B, 0.9)  # obj high but obj * cls = 0.18 below threshold
    out[0, 202, 5 + 4] = 0.2
    return out


@pytest.mark.parametrize("batch", [True, False])
def test_yolov5_score_is_obj_times_cls_and_nms_per_class(batch: bool) -> None:
    out = _yolov5()
    boxes, scores, classes = decode_yolov5(out if batch else out[0], 0.25, 0.45)
    assert classes.tolist() == [0, 7, 2]
    assert scores.tolist() == pytest.approx([0.875, 0.5, 0.4])
    assert boxes.tolist() == [BOX_A, [104, 150, 304, 350], BOX_B]
    assert len(decode_yolov5(out, 0.25, 0.45, max_detections=1)[0]) == 1


def _yolov8(n: int = 8400, classes: int = 80) -> np.ndarray:
    out = np.zeros((1, 4 + classes, n), np.float32)
    out[0, :4, 100] = OBJ_A
    out[0, 4 + 0, 100] = 0.9
    out[0, :4, 101] = (OBJ_A[0] + 4, *OBJ_A[1:])
    out[0, 4 + 0, 101] = 0.6  # suppressed by column 100
    out[0, :4, 8000] = OBJ_B
    out[0, 4 + 2, 8000] = 0.8
    out[0, 4 + 5, 8000] = 0.3  # lower class score of the same candidate: not reported
    out[0, :4, 8001] = OBJ_B
    out[0, 4 + 9, 8001] = 0.2  # below threshold
    return out


@pytest.mark.parametrize("layout", ["batch", "plain", "transposed"])
def test_yolov8_decodes_columns(layout: str) -> None:
    out = _yolov8()
    arr = {"batch": out, "plain": out[0], "transposed": out[0].T}[layout]
    boxes, scores, classes = decode_yolov8(arr, 0.25, 0.45)
    assert boxes.tolist() == [BOX_A, BOX_B]
    assert scores.tolist() == pytest.approx([0.9, 0.8])
    assert classes.tolist() == [0, 2]


def test_yolov8_orientation_by_class_count() -> None:
    a = np.zeros((10, 50), np.float32)  # 6 classes x 50 candidates, or 46 classes x 10 candidates
    assert yolov8_rows(a, num_classes=6).shape == (10, 50)
    assert yolov8_rows(a, num_classes=46).shape == (50, 10)
    with pytest.raises(ValueError, match="no axis of 4 \\+ 3"):
        yolov8_rows(a, num_classes=3)
    with pytest.raises(ValueError, match="ambiguous"):
        yolov8_rows(np.zeros((20, 20)), None)


def test_nothing_above_threshold_is_empty() -> None:
    for boxes, scores, classes in (
        decode_yolov8(np.zeros((84, 8400), np.float32), 0.25, 0.45),
        decode_yolov5(np.zeros((100, 85), np.float32), 0.25, 0.45),
    ):
        assert boxes.shape == (0, 4) and scores.shape == (0,) and classes.shape == (0,)


def test_yolov8_realistic_output_keeps_no_overlap_above_the_iou_threshold() -> None:
    # How fast this decodes is measured by tests/bench/bench_pure.py, not here.
    rng = np.random.default_rng(0)
    out = np.zeros((1, 84, 8400), np.float32)
    out[0, :2] = rng.uniform(0, 640, (2, 8400))
    out[0, 2:4] = rng.uniform(10, 200, (2, 8400))
    out[0, 4:] = rng.uniform(0, 0.05, (80, 8400))
    strong = rng.choice(8400, 400, replace=False)
    out[0, 4 + rng.integers(0, 80, 400), strong] = rng.uniform(0.3, 1.0, 400)
    boxes, scores, classes = decode_yolov8(out, 0.25, 0.45)
    assert 0 < len(boxes) <= 300
    assert (scores >= 0.25).all() and list(scores) == sorted(scores, reverse=True)
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if classes[i] == classes[j]:
                assert _iou(boxes[i], boxes[j]) <= 0.45 + 1e-6, (i, j)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    return float(inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter))
