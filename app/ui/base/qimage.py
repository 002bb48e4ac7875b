"""numpy RGB uint8 image -> QImage, safely (see NOTES.md, PySide6)."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage


def rgb_to_qimage(image: np.ndarray) -> QImage:
    """An owned QImage copy of an (H, W, 3) or (H, W) uint8 array.

    QImage(buffer, ...) does not copy: bytesPerLine must be the real row stride
    (Qt otherwise assumes 4-byte row alignment) and the result is .copy()'d so
    the numpy buffer may be freed or reused by the caller afterwards.
    """
    if image.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    if image.ndim == 2:
        fmt = QImage.Format.Format_Grayscale8
    elif image.ndim == 3 and image.shape[2] == 3:
        fmt = QImage.Format.Format_RGB888
    else:
        raise ValueError(f"expected an (H, W, 3) or (H, W) image, got shape {image.shape}")
    arr = np.ascontiguousarray(image)
    h, w = arr.shape[:2]
    qimg = QImage(arr.data, w, h, arr.strides[0], fmt)
    return qimg.copy()
