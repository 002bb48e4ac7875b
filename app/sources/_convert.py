"""Turn what OpenCV's capture returns (BGR, sometimes gray or BGRA) into contiguous RGB uint8."""

from __future__ import annotations

import cv2
import numpy as np


def bgr_to_rgb(image: np.ndarray) -> np.ndarray:
    """A new C-contiguous RGB uint8 H x W x 3 array (never a view of the capture's buffer)."""
    if image.dtype != np.uint8:
        image = cv2.convertScaleAbs(image)
    if image.ndim == 2:
        rgb = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
    elif image.shape[2] == 4:
        rgb = cv2.cvtColor(image, cv2.COLOR_BGRA2RGB)
    elif image.shape[2] == 1:
        rgb = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
    else:
        rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    return np.ascontiguousarray(rgb)
