"""What a file is, told by its first bytes, never by its name: image, video or neither.

The one place that knows the signatures (image reading and folder expansion both use it).
"""

from __future__ import annotations

from pathlib import Path

HEAD_BYTES = 512
_TS_PACKET = 188
# BMP info-header sizes (BITMAPCOREHEADER .. BITMAPV5HEADER): "BM" alone is too weak a signature.
_BMP_DIB_SIZES = {12, 16, 40, 52, 56, 64, 108, 124}
# ISO-BMFF brands that are still images (HEIF/AVIF), not videos.
_IMAGE_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1", b"avif", b"avis"}

IMAGE_FORMATS = "PNG, JPEG, BMP, TIFF, WebP, PPM/PGM, JPEG 2000"
GIF_SIGNATURES = (b"GIF87a", b"GIF89a")


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of a file (OSError propagates to the caller)."""
    with path.open("rb") as fh:
        return fh.read(size)


def is_image_head(head: bytes) -> bool:
    """True for the image formats this OpenCV build decodes."""
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
    # Radiance HDR. Not images here: GIF (this OpenCV build's image decoders cannot read it;
    # its FFmpeg reads every frame: a video, see looks_like_video) and OpenEXR (disabled in
    # OpenCV unless OPENCV_IO_ENABLE_OPENEXR is set).
    return head.startswith((b"#?RADIANCE", b"#?RGBE"))


def looks_like_video(head: bytes) -> bool:
    """True for common video containers: MP4/MOV, AVI, MKV/WebM, MPEG-TS, MPEG-PS, FLV, and
    GIF (animated or not: read frame by frame by OpenCV's FFmpeg, like a video)."""
    if head.startswith(GIF_SIGNATURES):
        return True
    if head[4:8] == b"ftyp":
        return head[8:12] not in _IMAGE_BRANDS
    if head.startswith(b"RIFF") and head[8:12] == b"AVI ":
        return True
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return True
    if head.startswith(b"\x00\x00\x01\xba") or head.startswith(b"FLV\x01"):
        return True
    # MPEG-TS: a sync byte at the start of the first two 188-byte packets.
    return len(head) > _TS_PACKET and head[0] == 0x47 and head[_TS_PACKET] == 0x47


def is_image_file(path: str | Path) -> bool:
    """True when the file's first bytes are those of an image format OpenCV reads.
    Unreadable paths and folders are not images."""
    try:
        return is_image_head(read_head(Path(path)))
    except OSError:
        return False


def is_gif_file(path: str | Path) -> bool:
    try:
        return read_head(Path(path), 6).startswith(GIF_SIGNATURES)
    except OSError:
        return False
