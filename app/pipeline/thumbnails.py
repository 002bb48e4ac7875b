"""Thumbnails of batch images, made on the feeding thread (never on the GUI thread)."""

from __future__ import annotations

import cv2
import numpy as np

THUMB_SIZE = 96


def make_thumbnail(image_rgb: np.ndarray, size: int = THUMB_SIZE) -> np.ndarray:
    """Downscale (INTER_AREA: no aliasing) so the longer side is at most `size` pixels."""
    h, w = image_rgb.shape[:2]
    scale = min(size / max(h, w, 1), 1.0)
    if scale >= 1.0:
        return np.ascontiguousarray(image_rgb)
    new_w, new_h = max(round(w * scale), 1), max(round(h * scale), 1)
    return cv2.resize(image_rgb, (new_w, new_h), interpolation=cv2.INTER_AREA)
