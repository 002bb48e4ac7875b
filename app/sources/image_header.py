"""An image's size read from its header bytes, before anything is decoded: JPEG, PNG, WebP,
TIFF (every page) and BMP. A header claiming more pixels than the decoder may allocate is
refused on these few bytes, never after gigabytes were allocated.

Also the signs that a JPEG cannot hold the image its header announces (OpenCV decodes such
a file without complaint, filling the missing part with grey): no end-of-image marker after
the scan, or fewer bytes of scan data than the smallest possible coding of that many blocks.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

# Start-of-frame markers (not DHT 0xC4, JPG 0xC8, DAC 0xCC); the Huffman-coded ones (baseline,
# extended, progressive, lossless) are those whose smallest coding is known (1 bit per block).
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_HUFFMAN_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7}
_SOS, _EOI = 0xDA, b"\xff\xd9"
# Half the fewest bytes a Huffman-coded JPEG needs per pixel (one bit per 8x8 block at the very
# least: one DC code, even for a flat picture): a file with less data is cut short.
_MIN_JPEG_BYTES_PER_PIXEL = 1 / (64 * 8 * 2)
MAX_TIFF_PAGES = 10_000  # a loop in a corrupt file's chain of pages ends here


class JpegFrame:
    """What a JPEG's markers say: its size, whether it is Huffman-coded, where its scan starts."""

    def __init__(self, width: int, height: int, huffman: bool, scan_at: int | None) -> None:
        self.width, self.height, self.huffman, self.scan_at = width, height, huffman, scan_at


def jpeg_frame(data: bytes) -> JpegFrame | None:
    """The frame header of a JPEG (None when `data` is not a readable JPEG)."""
    if not data.startswith(b"\xff\xd8"):
        return None
    i, frame = 2, None
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _SOF and frame is None and i + 9 <= len(data):
            h = int.from_bytes(data[i + 5 : i + 7], "big")
            w = int.from_bytes(data[i + 7 : i + 9], "big")
            if w <= 0 or h <= 0:
                return None
            frame = JpegFrame(w, h, marker in _HUFFMAN_SOF, None)
        if marker == _SOS:
            if frame is not None:
                frame.scan_at = i
            return frame
        if length < 2:
            return None
        i += 2 + length
    return frame


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a JPEG's frame header, None when `data` is not a readable JPEG."""
    frame = jpeg_frame(data)
    return (frame.width, frame.height) if frame is not None else None


def jpeg_damage(data: bytes) -> str | None:
    """Why a JPEG cannot hold the image its header announces, or None when it may."""
    frame = jpeg_frame(data)
    if frame is None or frame.scan_at is None:
        return None  # the decoder itself refuses those
    if data.rfind(_EOI) < frame.scan_at:
        return "the JPEG data ends before the image does (the file is truncated)"
    scan_bytes = len(data) - frame.scan_at
    if frame.huffman and scan_bytes < frame.width * frame.height * _MIN_JPEG_BYTES_PER_PIXEL:
        return (
            f"{scan_bytes} bytes of JPEG data cannot hold the {frame.width} x {frame.height} "
            "image its header announces (corrupt or truncated)"
        )
    return None


def png_size(data: bytes) -> tuple[int, int] | None:
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    w, h = struct.unpack(">II", data[16:24])
    return (w, h) if w > 0 and h > 0 else None


def webp_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk = data[12:16]
    if chunk == b"VP8X":  # extended: canvas size, 24-bit minus one
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8L" and data[20] == 0x2F:  # lossless: 14-bit sizes minus one
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":  # lossy key frame: 14-bit sizes
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    return None


def bmp_size(data: bytes) -> tuple[int, int] | None:
    if not data.startswith(b"BM") or len(data) < 26:
        return None
    if int.from_bytes(data[14:18], "little") == 12:  # BITMAPCOREHEADER: 16-bit sizes
        w, h = struct.unpack("<Hh", data[18:22])
    else:
        w, h = struct.unpack("<ii", data[18:26])
    return (abs(w), abs(h)) if w and h else None


def tiff_pages(data: bytes) -> list[tuple[int, int]] | None:
    """(width, height) of every page (image file directory) of a TIFF, in order; None when
    `data` is not a TIFF or its first directory cannot be read."""
    return _tiff_pages(lambda offset, size: data[offset : offset + size])


def tiff_pages_of_file(path: str | os.PathLike[str]) -> list[tuple[int, int]] | None:
    """`tiff_pages` of a file, reading only its directories (they may be anywhere in it)."""
    with open(path, "rb") as f:

        def read(offset: int, size: int) -> bytes:
            f.seek(offset)
            return f.read(size)

        return _tiff_pages(read)


def _tiff_pages(read: Callable[[int, int], bytes]) -> list[tuple[int, int]] | None:
    head = read(0, 8)
    if head[:4] == b"II*\x00":
        order = "<"
    elif head[:4] == b"MM\x00*":
        order = ">"
    else:
        return None
    pages: list[tuple[int, int]] = []
    seen: set[int] = set()
    (offset,) = struct.unpack(order + "I", head[4:8])
    while offset and offset not in seen and len(pages) < MAX_TIFF_PAGES:
        seen.add(offset)
        raw_count = read(offset, 2)
        if len(raw_count) < 2:
            break
        (count,) = struct.unpack(order + "H", raw_count)
        directory = read(offset + 2, 12 * count + 4)
        if len(directory) < 12 * count + 4:
            break
        size = {}
        for k in range(count):
            entry = directory[12 * k : 12 * k + 12]
            tag, kind = struct.unpack(order + "HH", entry[:4])
            if tag in (256, 257):  # ImageWidth, ImageLength: SHORT or LONG
                short = kind == 3
                size[tag] = struct.unpack(order + ("H" if short else "I"), entry[8 : 10 if short else 12])[0]
        if 256 in size and 257 in size:
            pages.append((size[256], size[257]))
        (offset,) = struct.unpack(order + "I", directory[12 * count : 12 * count + 4])
    return pages or None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header of a JPEG, PNG, WebP, BMP or TIFF (its largest page);
    None for other formats or an unreadable header."""
    for reader in (jpeg_size, png_size, webp_size, bmp_size):
        size = reader(data)
        if size is not None:
            return size
    pages = tiff_pages(data)
    return max(pages, key=lambda s: s[0] * s[1]) if pages else None
