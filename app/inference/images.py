"""Reading images: any OpenCV-readable image -> contiguous RGB uint8; image files told by content."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

_HEAD_BYTES = 32
# BMP info-header sizes (BITMAPCOREHEADER .. BITMAPV5HEADER): "BM" alone is too weak a signature.
_BMP_DIB_SIZES = {12, 16, 40, 52, 56, 64, 108, 124}


def _is_image_head(head: bytes) -> bool:
    if head.startswith(b"\x89PNG\r\n\x1a\n") or head.startswith(b"\xff\xd8\xff"):
        return True
    if head.startswith((b"II*\x00", b"MM\x00*")):  # TIFF little / big endian
        return True
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return True
    if head.startswith(b"BM") and len(head) >= 18:
        return int.from_bytes(head[14:18], "little") in _BMP_DIB_SIZES
    # Netpbm: P1..P6 then whitespace (P7 PAM also read by OpenCV).
    if len(head) >= 3 and head[0:1] == b"P" and head[1:2] in b"1234567" and head[2:3] in b" \t\r\n":
        return True
    # JPEG 2000 (JP2 box, raw codestream).
    if head.startswith(b"\x00\x00\x00\x0cjP  \r\n\x87\n") or head.startswith(b"\xff\x4f\xff\x51"):
        return True
    # Radiance HDR. Not images here: GIF (this OpenCV build cannot decode it) and OpenEXR
    # (disabled in OpenCV unless OPENCV_IO_ENABLE_OPENEXR is set).
    return head.startswith((b"#?RADIANCE", b"#?RGBE"))


def is_image_file(path: str | Path) -> bool:
    """True when the file's first bytes are those of an image format OpenCV reads.

    Decided by content, never by extension. Unreadable paths and folders are not images."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    return _is_image_head(head)


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
    -> a contiguous HxWx3 RGB uint8 array. Alpha is dropped (not composited)."""
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
    if not p.exists():
        raise ValueError(f"{p}: file not found")
    if p.is_dir():
        raise ValueError(f"{p}: is a folder, not an image file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.strerror or exc})") from None
    if not data:
        raise ValueError(f"{p}: the file is empty")
    if not _is_image_head(data[:_HEAD_BYTES]):
        raise ValueError(f"{p}: not an image (content is not PNG, JPEG, BMP, TIFF, WebP, PPM/PGM, JPEG 2000)")
    # imdecode from bytes: also works for non-ASCII paths on Windows, where imread does not.
    # ANYCOLOR|ANYDEPTH keeps gray and 16-bit data and, unlike UNCHANGED, applies EXIF rotation.
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH)
    if decoded is None:
        raise ValueError(f"{p}: image data is corrupt or in a variant OpenCV cannot decode")
    return to_rgb_uint8(decoded)
