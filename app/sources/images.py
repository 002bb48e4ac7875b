"""Reading images: any OpenCV-readable image -> contiguous RGB uint8 (files told by content).

Also the one converter of decoded pixels (files, video frames, camera frames) to RGB uint8."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from app.sources.image_header import image_size, jpeg_damage, jpeg_size, tiff_pages, tiff_pages_of_file
from app.sources.sniff import HEAD_BYTES, IMAGE_FORMATS, is_image_head
from app.system.bounded_read import read_bytes


def _to_uint8(image: np.ndarray) -> np.ndarray:
    dt = image.dtype
    if dt == np.uint8:
        return image
    if dt == np.bool_:
        return image.astype(np.uint8) * 255
    if dt == np.uint16:
        # 65535 / 257 == 255 exactly: full range to full range, rounded (x / 257 rounded to the
        # nearest equals (x + 128) // 257 for every 16-bit x), with no wider copy in between.
        return cv2.convertScaleAbs(image, alpha=1 / 257)
    if np.issubdtype(dt, np.floating):
        # Float images (EXR, HDR, 32F TIFF) are 0..1; brighter values are clipped.
        f = np.nan_to_num(image.astype(np.float32), nan=0.0, posinf=1.0, neginf=0.0)
        return (np.clip(f, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    if np.issubdtype(dt, np.integer):
        # Signed / wide ints: scale the non-negative range of the type down to 0..255.
        top = float(np.iinfo(dt).max)
        return (np.clip(image.astype(np.float64), 0, top) * (255.0 / top) + 0.5).astype(np.uint8)
    raise ValueError(f"unsupported image data type {dt}")


def to_rgb_uint8(image: np.ndarray, owned: bool = False) -> np.ndarray:
    """What `cv2.imread(path, cv2.IMREAD_UNCHANGED)` returns (BGR / BGRA / gray, any depth)
    -> a new contiguous HxWx3 RGB uint8 array (never a view of `image`, whose buffer a
    capture may reuse). 16-bit and float data are scaled, not saturated. Alpha is dropped.
    `owned`: the caller gives `image` up (a file just decoded): a BGR uint8 one is turned
    into RGB in place, without a second full-size copy at the peak."""
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"not an image: expected HxW or HxWxC with C in 1, 3, 4, got shape {a.shape}")
    converted = _to_uint8(a)
    owned = owned or converted is not a  # a scaled copy is ours to change
    a = converted
    if a.ndim == 2:
        out = cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_GRAY2RGB)
    elif a.shape[2] == 3 and owned and a.flags["C_CONTIGUOUS"]:
        out = cv2.cvtColor(a, cv2.COLOR_BGR2RGB, dst=a)
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


# The most pixels an image may be decoded at: the same limit as the session's for a prepared
# image (app.inference.core.session.MAX_INPUT_PIXELS; a test keeps them equal), checked here
# on the file's header before anything is decoded. A JPEG decoded at a reduced size (see
# read_image_for) counts at that size. Decoding 64 MP takes at most 64 MP x 8 bytes (16-bit
# RGBA) for the decoder's picture, then 192 MB as RGB: the README states the measured peak.
MAX_IMAGE_PIXELS = 64_000_000
# The largest file read: an uncompressed 64 MP 16-bit RGBA image, and some room.
MAX_IMAGE_FILE_BYTES = MAX_IMAGE_PIXELS * 8 + (16 << 20)


def _read_bytes(p: Path) -> bytes:
    # Refused by name before reading: a FIFO would block forever, a device never ends.
    data = read_bytes(p, MAX_IMAGE_FILE_BYTES)
    if not data:
        raise ValueError(f"{p}: the file is empty")
    if not is_image_head(data[:HEAD_BYTES]):
        raise ValueError(f"{p}: not an image (content is not {IMAGE_FORMATS})")
    return data


def _too_large(p: Path, w: int, h: int, factor: int = 1) -> ValueError:
    at = f" (decoded at 1/{factor}: {-(-w // factor)} x {-(-h // factor)})" if factor > 1 else ""
    return ValueError(
        f"{p}: too large: {w} x {h} = {w * h / 1e6:.0f} MP{at}; images of at most "
        f"{MAX_IMAGE_PIXELS / 1e6:.0f} MP are decoded"
    )


def check_header(p: Path, data: bytes, factor: int = 1) -> tuple[int, int] | None:
    """The image's size from its header (None: this format's header is not read), after
    refusing (ValueError naming the file) what would decode to more than MAX_IMAGE_PIXELS
    at 1/`factor`, or a JPEG that cannot hold the image it announces."""
    size = image_size(data)
    if size is not None:
        w, h = size
        if -(-w // factor) * -(-h // factor) > MAX_IMAGE_PIXELS:
            raise _too_large(p, w, h, factor)
    damage = jpeg_damage(data)
    if damage is not None:
        raise ValueError(f"{p}: {damage}")
    return size


def read_image(path: str | Path) -> np.ndarray:
    """Read an image file as contiguous RGB uint8; ValueError naming the file and the cause."""
    return read_image_for(path, None).image


def read_image_for(path: str | Path, min_side: int | None) -> DecodedImage:
    """Read an image, decoding a JPEG at 1/2, 1/4 or 1/8 of its size when that still leaves
    at least `min_side` pixels on its longest side (the decoder skips the detail: 2-3x less
    work than a full decode and a resize). Other formats, or None, decode in full. The size
    is checked on the header first (`check_header`)."""
    p = Path(path)
    data = _read_bytes(p)
    buffer = np.frombuffer(data, np.uint8)
    size = jpeg_size(data) if min_side else None
    factor = reduction_factor(max(size), min_side) if size and min_side else 1
    check_header(p, data, factor)
    if factor > 1:
        decoded = cv2.imdecode(buffer, REDUCED[factor])
        if decoded is not None:
            w, h = size  # type: ignore[misc]
            if (decoded.shape[1] > decoded.shape[0]) != (w > h):
                w, h = h, w  # the EXIF orientation turned it a quarter
            return DecodedImage(to_rgb_uint8(decoded, owned=True), w, h)
        check_header(p, data)  # decoded in full after all: at its full size
    # imdecode from bytes: also works for non-ASCII paths on Windows, where imread does not.
    # ANYCOLOR|ANYDEPTH keeps gray and 16-bit data and, unlike UNCHANGED, applies EXIF rotation.
    decoded = cv2.imdecode(buffer, cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH)
    del buffer, data  # the file's bytes are not needed any more: less at the peak below
    if decoded is None:
        raise ValueError(f"{p}: image data is corrupt or in a variant OpenCV cannot decode")
    if decoded.shape[0] * decoded.shape[1] > MAX_IMAGE_PIXELS:  # a format whose header is not read
        raise _too_large(p, decoded.shape[1], decoded.shape[0])
    rgb = to_rgb_uint8(decoded, owned=True)
    del decoded
    return DecodedImage(rgb, rgb.shape[1], rgb.shape[0])


REDUCED = {2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}


def reduction_factor(longest_side: int, min_side: int) -> int:
    """The largest of 1, 2, 4, 8 that keeps `longest_side / factor >= min_side`."""
    factor = 1
    while factor < 8 and longest_side // (factor * 2) >= min_side:
        factor *= 2
    return factor


class ImagePages:
    """The pages of a multi-page image file (TIFF), read one at a time: the file's bytes are
    read once (at most MAX_IMAGE_FILE_BYTES), each page is checked against MAX_IMAGE_PIXELS
    from its directory and decoded alone."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._data = _read_bytes(self.path)
        self.sizes = tiff_pages(self._data) or []

    @property
    def count(self) -> int:
        return len(self.sizes)

    def read(self, index: int) -> DecodedImage:
        """Page `index` as RGB; ValueError naming the file, the page and the cause."""
        w, h = self.sizes[index]
        if w * h > MAX_IMAGE_PIXELS:
            raise ValueError(
                f"{self.path} page {index + 1} of {self.count}: too large: {w} x {h} = "
                f"{w * h / 1e6:.0f} MP; images of at most {MAX_IMAGE_PIXELS / 1e6:.0f} MP are decoded"
            )
        flags = cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH
        buffer = np.frombuffer(self._data, np.uint8)
        ok, mats = cv2.imdecodemulti(buffer, flags, None, (index, index + 1))
        if not ok or not mats:
            raise ValueError(f"{self.path} page {index + 1} of {self.count}: cannot be decoded (corrupt?)")
        rgb = to_rgb_uint8(mats[0], owned=True)
        return DecodedImage(rgb, rgb.shape[1], rgb.shape[0])


def page_count(path: str | Path) -> int:
    """How many pages a TIFF holds (its directories only are read); 1 for anything else or a
    file whose directories cannot be read (reading it then says what is wrong)."""
    try:
        pages = tiff_pages_of_file(path)
    except (OSError, struct.error):
        return 1
    return len(pages) if pages else 1
