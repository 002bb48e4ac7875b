"""Masks and keypoints as COCO / labelme / YOLO shapes, read back by independent parsers
(pycocotools, a YOLO label parser written here, OpenCV polygon filling as labelme and
YOLO tools rasterise) and compared with what went in."""

import json

import cv2
import numpy as np
import pycocotools.mask as coco_mask
import pytest

from app.annotations.shapes import (
    coco_keypoints,
    coco_polygons,
    coco_segmentation,
    labelme_shapes,
    mask_polygons,
    semantic_labelme_shapes,
    yolo_pose_line,
    yolo_seg_line,
)
from app.inference.masks import BinaryMask
from app.inference.result import Detection, SemanticMask

H, W = 90, 160


def _blob() -> np.ndarray:
    """An L-shaped region plus a disk: two outer contours, one of them not convex."""
    full = np.zeros((H, W), bool)
    full[10:60, 20:40] = True
    full[45:60, 20:80] = True
    y, x = np.mgrid[0:H, 0:W]
    full |= (x - 120) ** 2 + (y - 40) ** 2 < 15**2
    return full


def _fill(polygons: list[np.ndarray]) -> np.ndarray:
    canvas = np.zeros((H, W), np.uint8)
    for polygon in polygons:
        cv2.fillPoly(canvas, [np.round(polygon).astype(np.int32)], 1)
    return canvas.astype(bool)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def _det(mask: np.ndarray | None = None, keypoints=None) -> Detection:
    return Detection(
        (20.0, 10.0, 135.0, 60.0),
        0.9,
        2,
        "thing",
        keypoints,
        BinaryMask.from_full(mask) if mask is not None else None,
    )


def test_coco_rle_and_polygons_read_back_by_pycocotools() -> None:
    full = _blob()
    mask = BinaryMask.from_full(full)
    rle = coco_segmentation(mask)
    decoded = coco_mask.decode({"size": rle["size"], "counts": rle["counts"].encode()})
    assert np.array_equal(decoded.astype(bool), full)
    polygons = coco_polygons(mask)
    assert len(polygons) == 2 and all(len(p) % 2 == 0 and len(p) >= 6 for p in polygons)
    back = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygons, H, W))).astype(bool)
    assert _iou(back, full) > 0.9  # polygons through boundary pixel centres lose half a pixel


def test_labelme_shapes_round_trip() -> None:
    full = _blob()
    kpts = ((25.0, 15.0, 0.9), (70.0, 50.0, 0.3), (120.0, 40.0, 0.7))
    shapes = json.loads(json.dumps(labelme_shapes(_det(full, kpts), 4, ["head", "hand", "foot"])))
    kinds = [s["shape_type"] for s in shapes]
    assert kinds == ["rectangle", "polygon", "polygon", "point", "point"]
    assert all(s["group_id"] == 4 for s in shapes)
    assert shapes[0]["points"] == [[20.0, 10.0], [135.0, 60.0]] and shapes[0]["label"] == "thing"
    filled = _fill([np.array(s["points"], np.float64) for s in shapes if s["shape_type"] == "polygon"])
    assert np.array_equal(filled, full)  # labelme fills polygons with their boundary pixels
    points = [(s["label"], s["points"][0]) for s in shapes if s["shape_type"] == "point"]
    assert points == [("thing/head", [25.0, 15.0]), ("thing/foot", [120.0, 40.0])]  # hand: not visible
    semantic = semantic_labelme_shapes([SemanticMask(1, "sky", BinaryMask.from_full(full))])
    assert [s["label"] for s in semantic] == ["sky", "sky"]
    assert np.array_equal(_fill([np.array(s["points"]) for s in semantic]), full)


def _parse_yolo(line: str) -> tuple[int, list[float]]:
    """A YOLO label line, parsed the way YOLO tools read it: class id, then floats."""
    parts = line.split()
    return int(parts[0]), [float(v) for v in parts[1:]]


def test_yolo_seg_line_round_trip() -> None:
    full = np.zeros((H, W), bool)
    full[10:60, 20:40] = True
    full[45:60, 20:80] = True
    line = yolo_seg_line(_det(full), 5, W, H)
    assert line is not None
    cls, values = _parse_yolo(line)
    assert cls == 5 and len(values) % 2 == 0 and all(0 <= v <= 1 for v in values)
    polygon = np.array(values).reshape(-1, 2) * [W, H]
    assert np.array_equal(_fill([polygon]), full)
    # Several regions: the largest one is the line's polygon.
    two = _blob()
    (largest, *_rest) = mask_polygons(BinaryMask.from_full(two))
    _, values = _parse_yolo(yolo_seg_line(_det(two), 0, W, H) or "")
    assert np.allclose(np.array(values).reshape(-1, 2) * [W, H], largest, atol=1e-3)
    assert yolo_seg_line(_det(None), 0, W, H) is None
    assert yolo_seg_line(_det(np.zeros((H, W), bool)), 0, W, H) is None


@pytest.mark.parametrize("dims", [2, 3])
def test_yolo_pose_line_round_trip(dims: int) -> None:
    kpts = ((25.0, 15.0, 0.9), (70.0, 50.0, 0.3), (120.0, 40.0, 0.7))
    cls, values = _parse_yolo(yolo_pose_line(_det(None, kpts), 1, W, H, dims))
    assert cls == 1
    cx, cy, bw, bh = values[:4]
    assert np.allclose([cx * W, cy * H, bw * W, bh * H], [77.5, 35.0, 115.0, 50.0], atol=1e-3)
    points = np.array(values[4:]).reshape(3, dims)
    assert np.allclose(points[0, :2] * [W, H], [25, 15], atol=1e-3)
    assert np.allclose(points[1, :2], [0, 0]) and np.allclose(points[2, :2] * [W, H], [120, 40], atol=1e-3)
    if dims == 3:
        assert points[:, 2].tolist() == [2, 0, 2]
    with pytest.raises(ValueError):
        yolo_pose_line(_det(None, kpts), 1, W, H, 4)


def test_coco_keypoints_visibility() -> None:
    flat, labelled = coco_keypoints(((25.0, 15.0, 0.9), (70.0, 50.0, 0.3)))
    assert flat == [25.0, 15.0, 2, 0, 0, 0] and labelled == 1
