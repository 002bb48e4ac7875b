"""PyTorch's bilinear resize (`F.interpolate(mode="bilinear", align_corners=False)`), in numpy,
on a window of the output only.

Ultralytics resizes its masks with it; OpenCV's warpAffine and remap quantise the sampling
position to 1/32 of a pixel, which moves a thresholded edge by a pixel here and there (a lot
for a thin mask), so the taps are computed as PyTorch computes them, in float32: per output
index i, source position scale * (i + 0.5) - 0.5 with scale = float32(in) / out, in one fused
multiply-add (measured on torch 2's CPU kernel: at an exact half-way tap the unfused product
gives 0.5 where torch gives 0.5000076), clamped at 0, then the two neighbours and their
weights. The output is interpolated along the width first,
then the height, as PyTorch's CPU kernel does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Taps:
    """For each output index: the two input indices it blends and their weights."""

    first: np.ndarray  # int64 (out,)
    second: np.ndarray  # int64 (out,): first + 1, or first at the last input index
    w_first: np.ndarray  # float32 (out,)
    w_second: np.ndarray  # float32 (out,)

    def covering(self, lo: int, hi: int) -> tuple[int, int]:
        """The output indices [a, b) whose taps reach input indices lo..hi-1 (the rest read
        only inputs outside them)."""
        return int(np.searchsorted(self.second, lo, "left")), int(np.searchsorted(self.first, hi, "left"))


@functools.lru_cache(maxsize=64)
def taps(in_len: int, out_len: int) -> Taps:
    """PyTorch's linear taps from `in_len` inputs to `out_len` outputs (align_corners=False)."""
    if in_len < 1 or out_len < 1:
        raise ValueError(f"cannot resize {in_len} samples to {out_len}")
    scale = np.float32(in_len) / np.float32(out_len)
    # float32 x float32 is exact in float64 and so is subtracting 0.5 at these sizes: rounding
    # once to float32 afterwards is what a fused multiply-add gives.
    src = (np.float64(scale) * (np.arange(out_len, dtype=np.float64) + 0.5) - 0.5).astype(np.float32)
    src = np.maximum(src, np.float32(0))
    first = np.minimum(np.floor(src).astype(np.int64), in_len - 1)
    w_second = np.clip(src - first.astype(np.float32), 0, 1).astype(np.float32)
    second = first + (first < in_len - 1)
    for a in (first, second, w_second):
        a.setflags(write=False)  # shared through the cache
    w_first = (np.float32(1) - w_second).astype(np.float32)
    w_first.setflags(write=False)
    return Taps(first, second, w_first, w_second)


def resize_window(
    window: np.ndarray,
    origin: tuple[int, int],
    rows: Taps,
    cols: Taps,
    out_rows: tuple[int, int],
    out_cols: tuple[int, int],
) -> np.ndarray:
    """Outputs out_rows x out_cols ([a, b) each) of the bilinear resize of an input of which
    `window` is the part whose top-left element is input (row, col) `origin`; the window must
    hold every input those outputs read. float32."""
    r0, c0 = origin
    src = np.asarray(window, np.float32)
    a, b = out_cols
    # In place, in PyTorch's order: (a w0 + b w1) across, then (top h0 + bottom h1) down.
    across = src[:, cols.first[a:b] - c0]
    across *= cols.w_first[a:b]
    right = src[:, cols.second[a:b] - c0]
    right *= cols.w_second[a:b]
    across += right
    a, b = out_rows
    out: np.ndarray = across[rows.first[a:b] - r0]
    out *= rows.w_first[a:b, None]
    bottom = across[rows.second[a:b] - r0]
    bottom *= rows.w_second[a:b, None]
    out += bottom
    return out
