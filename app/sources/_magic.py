"""Recognise video files by their first bytes, not their names (images: app.inference.images)."""

from __future__ import annotations

from pathlib import Path

_HEAD_BYTES = 512
_TS_PACKET = 188

# ISO-BMFF brands that are still images (HEIF/AVIF), not videos.
_IMAGE_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1", b"avif", b"avis"}


def read_head(path: Path, size: int = _HEAD_BYTES) -> bytes:
    """The first `size` bytes of a file (OSError propagates to the caller)."""
    with path.open("rb") as fh:
        return fh.read(size)


def looks_like_video(head: bytes) -> bool:
    """True for common video containers: MP4/MOV, AVI, MKV/WebM, MPEG-TS, MPEG-PS, FLV."""
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
