"""numpy RGB uint8 image -> QImage, safely (see NOTES.md, PySide6); a QImage to a
PNG file written whole or not at all."""

from __future__ import annotations

import os

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice
from PySide6.QtGui import QImage, QImageWriter

from app.system.atomic_files import write_whole


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


def png_bytes(image: QImage) -> bytes:
    """`image` encoded as PNG in memory (ValueError if Qt cannot)."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # QImageWriter: PNG whatever the file name's suffix (QImage.save(path, b"PNG")
    # is rejected by PySide6 6.12 at runtime although its stub declares bytes).
    writer = QImageWriter(buffer, b"png")
    if not writer.write(image):
        raise ValueError(f"cannot encode the picture as PNG: {writer.errorString()}")
    return bytes(buffer.data().data())


def write_png(path: str | os.PathLike[str], image: QImage) -> None:
    """`path` as a PNG of `image`, whole or not at all (encoded first: Qt's file writer reports
    success over a file a full disk left empty)."""
    write_whole(path, png_bytes(image))
