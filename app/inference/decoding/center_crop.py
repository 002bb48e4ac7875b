"""A classifier's input as Ultralytics feeds one (data/augment.py `classify_transforms`): the
shorter side resized to the input size with Pillow's BILINEAR filter (torchvision's
`T.Resize(size)`: the longer side int(size * long / short)), then `T.CenterCrop(size)`;
a non-square input size is resized to exactly (h, w).

Pillow's bilinear filter is not OpenCV's: when it shrinks it widens the triangle to the
scale (antialiasing), and it computes in 22-bit fixed point with a uint8 image between the
horizontal and the vertical pass. It is ported here exactly (Pillow's libImaging/Resample.c:
precompute_coeffs, normalize_coeffs_8bpc, ImagingResampleHorizontal/Vertical_8bpc), on the
output pixels the crop keeps only, so the tensor is the one Ultralytics sends, byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.inference.decoding.letterbox import clip_boxes

PRECISION_BITS = 32 - 8 - 2  # Pillow's fixed point for 8-bit images


@dataclass(frozen=True)
class CenterCropTransform:
    """Original -> input: x_in = x * gain_x - left, y_in = y * gain_y - top (the crop's
    offset in the resized image)."""

    gain_x: float
    gain_y: float
    left: int
    top: int
    src_w: int
    src_h: int
    dst_w: int
    dst_h: int

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        b = np.array(boxes, dtype=np.float32).reshape(-1, 4)
        b[:, 0::2] = (b[:, 0::2] + self.left) / self.gain_x
        b[:, 1::2] = (b[:, 1::2] + self.top) / self.gain_y
        return clip_boxes(b, self.src_w, self.src_h)

    def affine(self) -> tuple[float, float, float, float]:
        return self.gain_x, self.gain_y, float(-self.left), float(-self.top)


def pillow_bilinear_taps(
    in_size: int, out_size: int, first: int, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pillow's taps for outputs first..first+count-1 of a resize from in_size to out_size:
    (start (count,) int64, weights (count, ksize) int32 in fixed point, 0 past each window)."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 1.0 * filterscale  # the bilinear (triangle) filter's support is 1
    ksize = math.ceil(support) * 2 + 1
    centre = (np.arange(first, first + count, dtype=np.float64) + 0.5) * scale
    # C's (int) truncates toward zero; a negative start is clamped to 0 anyway.
    start = np.maximum(np.trunc(centre - support + 0.5), 0).astype(np.int64)
    stop = np.minimum(np.trunc(centre + support + 0.5).astype(np.int64), in_size)
    x = np.arange(ksize)
    inside = x[None, :] < (stop - start)[:, None]
    w = np.maximum(1.0 - np.abs((start[:, None] + x[None, :] - centre[:, None] + 0.5) / filterscale), 0.0)
    w = np.where(inside, w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=w, where=total != 0)
    fixed = np.trunc(0.5 + w * (1 << PRECISION_BITS)).astype(np.int32)  # weights are >= 0 here
    return start, fixed


def _resample(image: np.ndarray, axis: int, start: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One Pillow pass along `axis` (0: rows, 1: columns) of an (H, W, C) uint8 image."""
    # Along rows each tap is a gather of whole rows (memcpy); columns go through a transpose
    # first (2-3x faster than gathering columns).
    src = np.ascontiguousarray(image if axis == 0 else image.transpose(1, 0, 2))
    last = src.shape[0] - 1
    acc = np.full((len(start), *src.shape[1:]), 1 << (PRECISION_BITS - 1), np.int32)
    term = np.empty_like(acc)
    for k in range(weights.shape[1]):
        w = weights[:, k]
        if not w.any():
            continue
        np.multiply(src[np.minimum(start + k, last)], w[:, None, None], out=term)
        acc += term
    np.right_shift(acc, PRECISION_BITS, out=acc)
    out = np.clip(acc, 0, 255).astype(np.uint8)
    return out if axis == 0 else out.transpose(1, 0, 2)


def resized_size(h: int, w: int, size: tuple[int, int]) -> tuple[int, int]:
    """(new_h, new_w) torchvision's T.Resize gives: a square size resizes the shorter side to
    it (the longer one int(size * long / short)), any other size is taken as it is."""
    h_in, w_in = size
    if h_in != w_in:
        return h_in, w_in
    if w <= h:
        return int(h_in * h / w), h_in
    return h_in, int(h_in * w / h)


def _band(taps: tuple[np.ndarray, np.ndarray], size: int) -> tuple[int, int]:
    """The input indices [lo, hi) some output of `taps` reads."""
    start, weights = taps
    return int(start[0]), min(int(start[-1]) + weights.shape[1], size)


def vertical_first(h: int, w: int, new_h: int, new_w: int) -> bool:
    """Pillow 13's pass order (its PR 9549, "if height is scaled down significantly more than
    width, resize vertically first"): the vertical pass first when the height loses more than
    twice the pixels the width loses. Measured on 1,600 sizes against Pillow 13.0 (both orders
    are exact otherwise; Pillow 12 and older always went horizontal first)."""
    return new_h < h and (h - new_h) > 2 * (w - new_w)


def center_crop(image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, CenterCropTransform]:
    """An (H, W, C) uint8 image -> the (size) centre crop of its Pillow-bilinear resize."""
    if image.ndim != 3 or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"expected a non-empty HxWxC image, got shape {image.shape}")
    h, w = int(image.shape[0]), int(image.shape[1])
    h_in, w_in = size
    new_h, new_w = resized_size(h, w, size)
    if h_in > new_h or w_in > new_w:
        raise ValueError(f"cannot centre-crop {w_in}x{h_in} out of {new_w}x{new_h}")
    # torchvision's CenterCrop: int(round((side - crop) / 2)) with Python's (half-even) round.
    top, left = round((new_h - h_in) / 2.0), round((new_w - w_in) / 2.0)
    rows = pillow_bilinear_taps(h, new_h, top, h_in) if new_h != h else None
    cols = pillow_bilinear_taps(w, new_w, left, w_in) if new_w != w else None
    # Only the input the kept outputs read (an axis left as it is is cropped straight away).
    r0, r1 = _band(rows, h) if rows is not None else (top, top + h_in)
    c0, c1 = _band(cols, w) if cols is not None else (left, left + w_in)
    out = image[r0:r1, c0:c1]
    passes = []
    if cols is not None:
        passes.append((1, cols[0] - c0, cols[1]))
    if rows is not None:
        passes.append((0, rows[0] - r0, rows[1]))
    if len(passes) == 2 and vertical_first(h, w, new_h, new_w):
        passes.reverse()
    for axis, start, weights in passes:
        out = _resample(out, axis, start, weights)
    transform = CenterCropTransform(new_w / w, new_h / h, left, top, w, h, w_in, h_in)
    return np.ascontiguousarray(out), transform
