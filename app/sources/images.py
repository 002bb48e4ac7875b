"""Reading images: any OpenCV-readable image -> contiguous RGB uint8 (files told by content).

Also the one converter of decoded pixels (files, video frames, camera frames) to RGB uint8."""

from __future__ import annotations

import stat
from dataclasses import dataclass
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


@dataclass(frozen=True)
class DecodedImage:
    """An image decoded at `image`'s size, from an original of `width` x `height` pixels
    (larger when the file was decoded at a reduced size)."""

    image: np.ndarray  # RGB uint8
    width: int
    height: int

    @property
    def reduced(self) -> bool:
        return (self.width, self.height) != (self.image.shape[1], self.image.shape[0])


def _read_bytes(p: Path) -> bytes:
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
    return data


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as contiguous RGB uint8; ValueError naming the file and the cause."""
    return read_image_for(path, None).image


def read_image_for(path: str | Path, min_side: int | None) -> DecodedImage:
    """Read an image, decoding a JPEG at 1/2, 1/4 or 1/8 of its size when that still leaves
    at least `min_side` pixels on its longest side (the decoder skips the detail: 2-3x less
    work than a full decode and a resize). Other formats, or None, decode in full."""
    p = Path(path)
    data = _read_bytes(p)
    buffer = np.frombuffer(data, np.uint8)
    size = jpeg_size(data) if min_side else None
    factor = reduction_factor(max(size), min_side) if size and min_side else 1
    if factor > 1:
        decoded = cv2.imdecode(buffer, REDUCED[factor])
        if decoded is not None:
            w, h = size  # type: ignore[misc]
            if (decoded.shape[1] > decoded.shape[0]) != (w > h):
                w, h = h, w  # the EXIF orientation turned it a quarter
            return DecodedImage(to_rgb_uint8(decoded), w, h)
    # imdecode from bytes: also works for non-ASCII paths on Windows, where imread does not.
    # ANYCOLOR|ANYDEPTH keeps gray and 16-bit data and, unlike UNCHANGED, applies EXIF rotation.
    decoded = cv2.imdecode(buffer, cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH)
    if decoded is None:
        raise ValueError(f"{p}: image data is corrupt or in a variant OpenCV cannot decode")
    rgb = to_rgb_uint8(decoded)
    return DecodedImage(rgb, rgb.shape[1], rgb.shape[0])


REDUCED = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def reduction_factor(longest_side: int, min_side: int) -> int:
    """The largest of 1, 2, 4, 8 that keeps `longest_side / factor >= min_side`."""
    factor = 1
    while factor < 8 and longest_side // (factor * 2) >= min_side:
        factor *= 2
    return factor


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, None when `data` is not a readable JPEG."""
    if not data.startswith(b"\xff\xd8"):
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _SOF:
            h = int.from_bytes(data[i + 5 : i + 7], "big")
            w = int.from_bytes(data[i + 7 : i + 9], "big")
            return (w, h) if w > 0 and h > 0 else None
        if marker == 0xDA or length < 2:  # scan data before any frame header: give up
            return None
        i += 2 + length
    return None
