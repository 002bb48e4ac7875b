"""Instance masks of a YOLOv8/YOLO11/YOLO26 segmentation output, in original-image pixels,
as Ultralytics 8.4's predict() makes them (retina_masks=False, its default).

Ultralytics (ops.process_mask with upsample=True, then ops.scale_masks as its plots and the
reference take them to the original image):
1. logits = coefficients @ prototypes [nm, Hm, Wm] (the prototypes cover the model input);
2. resized bilinearly to the input size (H_in, W_in), kept where > 0 (sigmoid > 0.5);
3. cropped to the box in input pixels, unclipped: pixel column c kept when x1 <= c < x2
   (its index, not its centre), rows alike; a detection whose mask is then empty is dropped;
4. the letterbox's content region of that 0/1 mask resized bilinearly to the original image,
   kept where > 0.5.
Each resize is PyTorch's (bilinear.py), done only on the box's window: the cost follows the
boxes' areas, not (instances x image size).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from app.inference.decoding.bilinear import Taps, resize_window, taps
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


def content_region(transform: BoxTransform) -> tuple[int, int, int, int]:
    """(top, height, left, width) in input pixels of the part of the model input the image
    fills (a letterbox's padding excluded): what Ultralytics' scale_masks resizes."""
    sx, sy, tx, ty = transform.affine()
    left = min(max(round(tx), 0), transform.dst_w - 1)
    top = min(max(round(ty), 0), transform.dst_h - 1)
    width = min(max(round(sx * transform.src_w), 1), transform.dst_w - left)
    height = min(max(round(sy * transform.src_h), 1), transform.dst_h - top)
    return top, height, left, width


def _pixels(lo: float, hi: float, size: int) -> tuple[int, int]:
    """Pixel indices c in [0, size) with lo <= c < hi: crop_mask's rule."""
    return max(math.ceil(lo), 0), min(math.ceil(hi), size)


class PrototypeUpsampler:
    """Step 2 on a window of the prototypes: the logits at input pixels rows x cols."""

    def __init__(self, protos: np.ndarray, in_h: int, in_w: int) -> None:
        self.protos = np.asarray(protos, np.float32)
        _, hm, wm = self.protos.shape
        self.rows, self.cols = taps(hm, in_h), taps(wm, in_w)
        factor = in_w // wm
        # A power-of-two factor (4 for every YOLO-seg head) makes every tap weight exact:
        # OpenCV's float resize then computes what PyTorch does, several times faster.
        exact = factor * wm == in_w and factor * hm == in_h and factor & (factor - 1) == 0
        self.factor = factor if exact else 0

    def logits(self, coef: np.ndarray, rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        g_r = int(self.rows.first[rows[0]]), int(self.rows.second[rows[1] - 1]) + 1
        g_c = int(self.cols.first[cols[0]]), int(self.cols.second[cols[1] - 1]) + 1
        window = self.protos[:, g_r[0] : g_r[1], g_c[0] : g_c[1]]
        # einsum reads the strided window as it is (a matmul would copy it first: 3-7x slower).
        product = np.einsum("k,khw->hw", coef, window)
        if self.factor:
            k = self.factor
            up = cv2.resize(product, None, fx=k, fy=k, interpolation=cv2.INTER_LINEAR)
            r, c = k * g_r[0], k * g_c[0]  # the input pixel up[0, 0] is
            return up[rows[0] - r : rows[1] - r, cols[0] - c : cols[1] - c]
        return resize_window(product, (g_r[0], g_c[0]), self.rows, self.cols, rows, cols)


def _to_original(
    inside: np.ndarray, origin: tuple[int, int], content: tuple[int, int, int, int], down: tuple[Taps, Taps],
    size: tuple[int, int],
) -> BinaryMask:  # fmt: skip
    """Step 4: a 0/1 crop at input pixels (top-left `origin`) -> its pixels in the original."""
    top, height, left, width = content
    r0, c0 = origin[0] - top, origin[1] - left  # content coordinates
    a_r, b_r = max(r0, 0), min(r0 + inside.shape[0], height)
    a_c, b_c = max(c0, 0), min(c0 + inside.shape[1], width)
    if b_r <= a_r or b_c <= a_c:  # all in the padding
        return BinaryMask(np.zeros((0, 0), bool), 0, 0, size)
    crop = inside[a_r - r0 : b_r - r0, a_c - c0 : b_c - c0]
    if (height, width) == size:  # the same size: PyTorch's taps are 1 and 0, the mask as it is
        return BinaryMask(crop, a_c, a_r, size)
    rows, cols = down
    v = rows.covering(a_r, b_r)
    u = cols.covering(a_c, b_c)
    if v[1] <= v[0] or u[1] <= u[0]:  # a sliver no original pixel samples (a smaller image)
        return BinaryMask(np.zeros((0, 0), bool), 0, 0, size)
    # One zero row/column around: outside the crop the mask is 0, and the taps may read there.
    part = np.zeros((b_r - a_r + 2, b_c - a_c + 2), np.float32)
    part[1:-1, 1:-1] = crop
    values = resize_window(part, (a_r - 1, a_c - 1), rows, cols, v, u)
    return BinaryMask(values > 0.5, u[0], v[0], size)


def instance_masks(
    coefficients: np.ndarray,
    protos: np.ndarray,
    boxes: np.ndarray,
    transform: BoxTransform,
    threshold: float = 0.5,
) -> list[BinaryMask | None]:
    """coefficients (n, nm), prototypes (nm, Hm, Wm), boxes (n, 4) x1 y1 x2 y2 in MODEL-INPUT
    pixels as the model gave them (not clipped) -> one mask per box in original pixels, or
    None where the mask is empty at the input's size (Ultralytics drops that detection)."""
    nm = np.shape(protos)[0]
    if coefficients.shape[1] != nm:
        raise ValueError(f"{coefficients.shape[1]} mask coefficients per detection for {nm} prototypes")
    in_h, in_w = transform.dst_h, transform.dst_w
    upsampler = PrototypeUpsampler(protos, in_h, in_w)
    content = content_region(transform)
    size = (transform.src_h, transform.src_w)
    down = taps(content[1], size[0]), taps(content[3], size[1])
    cut = logit(threshold)
    masks: list[BinaryMask | None] = []
    for coef, (x1, y1, x2, y2) in zip(np.asarray(coefficients, np.float32), boxes, strict=True):
        rows, cols = _pixels(y1, y2, in_h), _pixels(x1, x2, in_w)
        if rows[1] <= rows[0] or cols[1] <= cols[0]:
            masks.append(None)
            continue
        inside = upsampler.logits(coef, rows, cols) > cut
        if not inside.any():
            masks.append(None)
            continue
        masks.append(_to_original(inside, (rows[0], cols[0]), content, down, size))
    return masks
