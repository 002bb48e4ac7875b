"""Instance masks of a raw YOLOv8/YOLO11 segmentation output, in original-image pixels.

Each detection's mask is its 32 coefficients times the prototypes [32, Hm, Wm] (which cover
the whole model input), through a sigmoid, kept inside the box, and taken back through
the letterbox to the original image. Only the box's own part of the prototypes is
multiplied and resampled, straight to original pixels in one `cv2.warpAffine`: the cost
follows the boxes' areas, not (instances x image size).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from app.inference.decoding.letterbox import BoxTransform
from app.inference.masks import BinaryMask


def logit(p: float) -> float:
    """sigmoid(x) > p  <=>  x > logit(p): thresholding the raw product needs no sigmoid."""
    return math.log(p / (1.0 - p))


def original_to_grid(transform: BoxTransform, grid_w: int, grid_h: int) -> tuple[float, float, float, float]:
    """(ax, bx, ay, by): the centre of original pixel (u, v) falls at grid index coordinates
    (ax u + bx, ay v + by) of a map of grid_w x grid_h cells spread over the model input
    (cell j covers [j, j + 1) in those coordinates, its centre at j + 0.5 - 0.5 = j)."""
    sx, sy, tx, ty = transform.affine()
    kx, ky = grid_w / transform.dst_w, grid_h / transform.dst_h
    return sx * kx, (0.5 * sx + tx) * kx - 0.5, sy * ky, (0.5 * sy + ty) * ky - 0.5


def _span(lo: float, hi: float, a: float, b: float, cells: int) -> tuple[int, int]:
    """Grid cells (with a one-cell margin for interpolation) that pixels lo..hi-1 sample."""
    first, last = a * lo + b, a * (hi - 1) + b
    return max(math.floor(first) - 1, 0), min(math.ceil(last) + 2, cells)


def instance_masks(
    coefficients: np.ndarray,
    protos: np.ndarray,
    boxes: np.ndarray,
    transform: BoxTransform,
    threshold: float = 0.5,
) -> list[BinaryMask]:
    """coefficients (n, nm), prototypes (nm, Hm, Wm), boxes (n, 4) in ORIGINAL pixels
    (clipped) -> one mask per box, cropped to it."""
    nm, hm, wm = protos.shape
    if coefficients.shape[1] != nm:
        raise ValueError(f"{coefficients.shape[1]} mask coefficients per detection for {nm} prototypes")
    ax, bx, ay, by = original_to_grid(transform, wm, hm)
    size = (transform.src_h, transform.src_w)
    cut = logit(threshold)
    protos = np.asarray(protos, np.float32)
    coefficients = np.asarray(coefficients, np.float32)
    masks = []
    for coef, (bx1, by1, bx2, by2) in zip(coefficients, boxes, strict=True):
        x0, y0 = max(math.floor(bx1), 0), max(math.floor(by1), 0)
        x1, y1 = min(math.ceil(bx2), size[1]), min(math.ceil(by2), size[0])
        if x1 <= x0 or y1 <= y0:
            masks.append(BinaryMask(np.zeros((0, 0), bool), 0, 0, size))
            continue
        gx0, gx1 = _span(x0, x1, ax, bx, wm)
        gy0, gy1 = _span(y0, y1, ay, by, hm)
        window = protos[:, gy0:gy1, gx0:gx1]
        scores = (coef @ window.reshape(nm, -1)).reshape(window.shape[1:])
        # dst(u, v) = scores(ax (x0 + u) + bx - gx0, ay (y0 + v) + by - gy0): bilinear, in one call.
        warp = np.array([[ax, 0.0, ax * x0 + bx - gx0], [0.0, ay, ay * y0 + by - gy0]], np.float64)
        region = cv2.warpAffine(
            scores, warp, (x1 - x0, y1 - y0),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE,
        )  # fmt: skip
        # Crop to the box: pixels whose centre lies inside it.
        cols = np.arange(x0, x1) + 0.5
        rows = np.arange(y0, y1) + 0.5
        inside = ((rows >= by1) & (rows < by2))[:, None] & ((cols >= bx1) & (cols < bx2))[None, :]
        masks.append(BinaryMask((region > cut) & inside, x0, y0, size))
    return masks
