"""Reading images: any OpenCV-readable image -> contiguous RGB uint8 (files told by content).

Also the one converter of decoded pixels (files, video frames, camera frames) to RGB uint8."""

from __future__ import annotations

import stat
from pathlib import Path

import cv2
import numpy as np

from app.sources.sniff import HEAD_BYTES, IMAGE_FORMATS, is_image_head


def _to_uint8(image: np.ndarray) -> np.ndarray:
    dt = image.dtype
    if dt == np.uint8:
        return image
    if dt == np.bool_:
        return image.astype(np.uint8) * 255
    if dt == np.uint16:
        # 65535 / 257 == 255 exactly: full range to full range, rounded.
        return ((image.astype(np.uint32) + 128) // 257).astype(np.uint8)
    if np.issubdtype(dt, np.floating):
        # Float images (EXR, HDR, 32F TIFF) are 0..1; brighter values are clipped.
        f = np.nan_to_num(image.astype(np.float32), nan=0.0, posinf=1.0, neginf=0.0)
        return (np.clip(f, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if np.issubdtype(dt, np.integer):
        # Signed / wide ints: scale the non-negative range of the type down to 0..255.
        top = float(np.iinfo(dt).max)
        return (np.clip(image.astype(np.float64), 0, top) * (255.0 / top) + 0.5).astype(np.uint8)
    raise ValueError(f"unsupported image data type {dt}")


def to_rgb_uint8(image: np.ndarray) -> np.ndarray:
    """What `cv2.imread(path, cv2.IMREAD_UNCHANGED)` returns (BGR / BGRA / gray, any depth)
    -> a new contiguous HxWx3 RGB uint8 array (never a view of `image`, whose buffer a
    capture may reuse). 16-bit and float data are scaled, not saturated. Alpha is dropped."""
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"not an image: expected HxW or HxWxC with C in 1, 3, 4, got shape {a.shape}")
    a = _to_uint8(a)
    if a.ndim == 2:
        out = cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_GRAY2RGB)
    elif a.shape[2] == 3:
        out = cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_BGR2RGB)
    elif a.shape[2] == 4:
        out = cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_BGRA2RGB)
    else:
        raise ValueError(f"not an image: {a.shape[2]} channels (expected 1, 3 or 4)")
    return np.ascontiguousarray(out)


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as contiguous RGB uint8; ValueError naming the file and the cause."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise ValueError(f"{p}: file not found") from None
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{p}: is a folder, not an image file")
    if not stat.S_ISREG(mode):  # a FIFO would block the read forever
        raise ValueError(f"{p}: not a regular file (a pipe, socket or device)")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.strerror or exc})") from None
    if not data:
        raise ValueError(f"{p}: the file is empty")
    if not is_image_head(data[:HEAD_BYTES]):
        raise ValueError(f"{p}: not an image (content is not {IMAGE_FORMATS})")
    # imdecode from bytes: also works for non-ASCII paths on Windows, where imread does not.
    # ANYCOLOR|ANYDEPTH keeps gray and 16-bit data and, unlike UNCHANGED, applies EXIF rotation.
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH)
    if decoded is None:
        raise ValueError(f"{p}: image data is corrupt or in a variant OpenCV cannot decode")
    return to_rgb_uint8(decoded)
