"""Semantic segmentation maps -> one mask per class present, in original-image pixels.

A map is [C, H, W] or [H, W, C] class scores/probabilities, [1, H, W] the probability of a
single class, or [H, W] integer class ids. Its H x W cells cover the whole model input, so
it goes back through the same letterbox/resize as boxes do (a model that takes the raw
image and resizes it itself answers over the whole original image).

Multi-class maps are reduced to class ids (argmax) at the map's own resolution, then
sampled at every original pixel (nearest cell): one pass, whatever the class count.
A single-class probability map is resampled bilinearly, then thresholded: smooth edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import cv2
import numpy as np

from app.inference.decoding.decode_masks import original_to_grid
from app.inference.decoding.labels import label_name
from app.inference.decoding.letterbox import BoxTransform
from app.inference.masks import BinaryMask
from app.inference.result import SemanticMask

# Classes never reported as a mask: what the rest of the image is.
BACKGROUND_LABELS = frozenset({"background", "__background__", "bg", "_background_"})


def map_layout(shape: tuple[int, ...]) -> str:
    """CHW, HWC or HW for a map shape (batch dims already dropped): the channel axis is
    the smaller end axis; spatial maps are much larger than class counts."""
    if len(shape) == 2:
        return "HW"
    if len(shape) != 3:
        raise ValueError(f"semantic map: expected [C, H, W], [H, W, C] or [H, W], got {list(shape)}")
    return "CHW" if shape[0] <= shape[2] else "HWC"


def _squeeze_batch(a: np.ndarray, layout: str | None) -> np.ndarray:
    rank = 2 if layout == "HW" else 3
    while a.ndim > rank:
        if a.shape[0] != 1:
            raise ValueError(
                f"semantic map: expected one image per request (leading dim 1), got {list(a.shape)}"
            )
        a = a[0]
    return a


def _resample(grid: np.ndarray, transform: BoxTransform, interpolation: int) -> np.ndarray:
    """A (Hm, Wm) map over the model input -> (src_h, src_w) over the original image."""
    hm, wm = grid.shape
    ax, bx, ay, by = original_to_grid(transform, wm, hm)
    warp = np.array([[ax, 0.0, bx], [0.0, ay, by]], np.float64)
    return cv2.warpAffine(
        grid, warp, (transform.src_w, transform.src_h),
        flags=interpolation | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE,
    )  # fmt: skip


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60, 60)))


def semantic_masks(
    tensor: np.ndarray,
    transform: BoxTransform,
    labels: Sequence[str],
    layout: str | None = None,
    logits: bool = False,
    threshold: float = 0.5,
) -> list[SemanticMask]:
    """One `SemanticMask` per class present (background classes left out), by class id."""
    a = _squeeze_batch(np.asarray(tensor), layout)
    layout = layout or map_layout(a.shape)
    if a.ndim != (2 if layout == "HW" else 3):
        raise ValueError(f"semantic map {list(a.shape)} does not match layout {layout}")
    if layout == "HWC":
        a = a.transpose(2, 0, 1)
    if layout == "HW" and np.issubdtype(a.dtype, np.floating):
        a = a[None]  # a float [H, W] map is one class's probability
    if a.ndim == 3 and a.shape[0] == 1:
        probability = a[0].astype(np.float32)
        if logits:
            probability = _sigmoid(probability)
        pixels = _resample(np.ascontiguousarray(probability), transform, cv2.INTER_LINEAR) > threshold
        return _masks([(0, pixels)], labels)
    ids = a if a.ndim == 2 else a.argmax(axis=0)  # softmax keeps the argmax: logits or not
    if ids.size and (ids.min() < 0 or ids.max() > np.iinfo(np.uint16).max):
        raise ValueError(f"semantic map: class ids must be 0..65535, got {ids.min()}..{ids.max()}")
    ids = np.ascontiguousarray(ids, np.uint8 if ids.max(initial=0) < 256 else np.uint16)
    full = _resample(ids, transform, cv2.INTER_NEAREST)
    present = np.flatnonzero(np.bincount(full.ravel()))
    return _masks(((int(c), full == c) for c in present), labels)


def _masks(pixels_by_class: Iterable[tuple[int, np.ndarray]], labels: Sequence[str]) -> list[SemanticMask]:
    out = []
    for class_id, pixels in pixels_by_class:
        label = label_name(labels, class_id)
        if label.lower() not in BACKGROUND_LABELS and pixels.any():
            out.append(SemanticMask(class_id, label, BinaryMask.from_full(pixels)))
    return out
