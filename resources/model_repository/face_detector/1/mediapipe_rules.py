"""MediaPipe's rules shared by the models of this repository that must give MediaPipe's
answers (face_detector, pose_detector, face_mesh, person_pose):
- region geometry: a detection becomes a rotated square region, the region is cut out of the
  image at a model's input size (the whole image as a letterbox, for a detector), and the
  points found in it are projected back to the image;
- weighted non-max suppression, as MediaPipe's detectors do it.

Each of those models carries an identical copy in its own version folder, beside its model.py
(so each model folder deploys alone into any repository; tests/unit/test_bundled_helpers.py
keeps the copies equal: edit one, copy it to the others). Everything is in image pixels; MediaPipe
computes the same in normalised coordinates (DetectionsToRectsCalculator,
AlignmentPointsRectsCalculator, RectTransformationCalculator, ImageToTensorCalculator's
OpenCV converter, LandmarkProjectionCalculator, NonMaxSuppressionCalculator).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import cv2
import numpy as np


class Region(NamedTuple):
    """A rotated rectangle in image pixels: centre, size and rotation (radians, clockwise on
    screen as y points down)."""

    cx: float
    cy: float
    width: float
    height: float
    rotation: float


def normalize_radians(angle: float) -> float:
    """The angle in [-pi, pi)."""
    return angle - 2 * math.pi * math.floor((angle + math.pi) / (2 * math.pi))


def _rotation(start: np.ndarray, end: np.ndarray, target: float) -> float:
    """Rotation that turns the vector start -> end to `target` (radians; y flipped up)."""
    return normalize_radians(target - math.atan2(-(float(end[1]) - float(start[1])), float(end[0]) - float(start[0])))


def region_from_box(box: np.ndarray, start: np.ndarray, end: np.ndarray, target: float = 0.0) -> Region:
    """A box (x1, y1, x2, y2) rotated so that start -> end points at `target` (the face mesh:
    the right eye to the left eye, level)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return Region((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, _rotation(start, end, target))


def region_from_alignment(centre: np.ndarray, scale_point: np.ndarray, target: float = math.pi / 2) -> Region:
    """A square centred on `centre`, twice as wide as its distance to `scale_point`, rotated so
    that centre -> scale_point points at `target` (BlazePose: the hips' centre and the point
    above the head, upright)."""
    size = 2.0 * math.hypot(float(scale_point[0]) - float(centre[0]), float(scale_point[1]) - float(centre[1]))
    return Region(float(centre[0]), float(centre[1]), size, size, _rotation(centre, scale_point, target))


def square_long(region: Region, scale: float) -> Region:
    """The region made square on its longer side, then enlarged `scale` times."""
    side = max(region.width, region.height) * scale
    return region._replace(width=side, height=side)


def crop(image: np.ndarray, region: Region, size: int, replicate_border: bool = True) -> np.ndarray:
    """The region cut out of an HWC uint8 image, resized to size x size (bilinear). As
    MediaPipe: its corners go to the output's corners (0 and `size`), the border repeats the
    edge pixels (or is black)."""
    rect = ((region.cx, region.cy), (region.width, region.height), math.degrees(region.rotation))
    corners = cv2.boxPoints(rect).astype(np.float32)  # bottom-left, top-left, top-right, bottom-right
    target = np.array([[0, size], [0, 0], [size, 0], [size, size]], np.float32)
    matrix = cv2.getPerspectiveTransform(corners, target)
    border = cv2.BORDER_REPLICATE if replicate_border else cv2.BORDER_CONSTANT
    return cv2.warpPerspective(image, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=border)


def project(points: np.ndarray, region: Region, size: int) -> np.ndarray:
    """(N, 2) x, y in pixels of a size x size crop of `region` -> image pixels."""
    p = np.asarray(points, np.float64)[:, :2] / size - 0.5
    c, s = math.cos(region.rotation), math.sin(region.rotation)
    x = (c * p[:, 0] - s * p[:, 1]) * region.width + region.cx
    y = (s * p[:, 0] + c * p[:, 1]) * region.height + region.cy
    return np.stack([x, y], axis=1)


def whole_image(width: int, height: int) -> Region:
    """The image as one region, made square on its longer side (a letterbox, centred)."""
    return square_long(Region(width / 2, height / 2, float(width), float(height), 0.0), 1.0)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    ix = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    iy = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = ix * iy
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = (box[2] - box[0]) * (box[3] - box[1]) + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def weighted_nms(
    boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray, threshold: float, limit: int
) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """MediaPipe's WEIGHTED non-max suppression of (N, 4) boxes x1, y1, x2, y2 with (N, K, 2)
    keypoints: the best detection left and every one overlapping it by more than `threshold`
    IoU become one, their boxes and keypoints averaged with the scores as weights; it keeps
    the best one's score. At most `limit` detections, best first."""
    order = np.argsort(-scores, kind="stable")
    kept = []
    while order.size and len(kept) < limit:
        overlap = _iou(boxes[order[0]], boxes[order]) > threshold
        group, order = order[overlap], order[~overlap]
        if not group.size:  # a degenerate best box overlaps nothing, not even itself
            break
        weights = scores[group][:, None]
        total = weights.sum()
        box = (boxes[group] * weights).sum(axis=0) / total
        points = (keypoints[group] * weights[:, :, None]).sum(axis=0) / total
        kept.append((box, points, float(scores[group[0]])))
    return kept
