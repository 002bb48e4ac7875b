"""Grab now, decode later: a live source's frames are read as cheaply as possible, and only
the frames someone takes are decoded, at the size they need.

An MJPG source (most webcams at 720p and above, MJPG files and streams) is read as its JPEG
packets (FFmpeg's raw mode; a V4L2 camera without RGB conversion): reading one costs a copy of
~100-300 KB, and decoding it can shrink it 2, 4 or 8 times in the decoder itself (libjpeg's
DCT scaling: 3-6x less work than a full decode, measured at 1080p and 2160p). Any other source
is grabbed (its codec still decodes: that cannot be skipped) and only converted to pixels
(`retrieve`) when the frame is taken, before the next grab.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from app.sources._source_spec import CaptureLike, SourceSpec
from app.sources.frame import Frame
from app.sources.images import REDUCED, jpeg_size, reduction_factor, to_rgb_uint8

MJPG_CODECS = ("MJPG", "MJPA", "JPEG", "AVRN")
HEADER_BYTES = 65536  # a JPEG's frame header (SOF) comes after its tables, well within this


def codec_of(cap: CaptureLike) -> str:
    """The capture's FOURCC as text ("MJPG", "H264", ...; "" when unknown)."""
    fourcc = int(cap.get(cv2.CAP_PROP_FOURCC) or 0)
    if fourcc <= 0:
        return ""
    return fourcc.to_bytes(4, "little").decode("latin-1").strip("\0 ").upper()


def read_packets(cap: CaptureLike, spec: SourceSpec) -> bool:
    """Switch an MJPG capture to JPEG packets; True when it now gives them (each frame is then
    checked as it comes: a backend that ignored the switch still gives pictures)."""
    if codec_of(cap) not in MJPG_CODECS:
        return False
    if spec.kind == "camera":
        # V4L2 (Linux) then gives the driver's buffer as it is: the camera's JPEG. Other
        # platforms' backends give raw pixels of their own layouts instead: left as they are.
        return sys.platform.startswith("linux") and bool(cap.set(cv2.CAP_PROP_CONVERT_RGB, 0))
    return bool(cap.set(cv2.CAP_PROP_FORMAT, -1))  # FFmpeg: the demuxer's packets


def is_jpeg_packet(data: np.ndarray) -> bool:
    """A buffer of bytes in one row or column that starts like a JPEG (not a picture)."""
    return (
        data.dtype == np.uint8
        and data.size > 4
        and (data.ndim == 1 or (data.ndim == 2 and 1 in data.shape))
        and data.flat[0] == 0xFF
        and data.flat[1] == 0xD8
    )


@dataclass(frozen=True)
class DecodeRequest:
    """What a frame is decoded for. min_side: the longest side it needs at least (None: full
    size); display: also give it as 4-byte pixels for the screen (`Frame.display`)."""

    min_side: int | None = None
    display: bool = False


FULL = DecodeRequest()


def bgr_to_display(bgr: np.ndarray) -> np.ndarray:
    """H x W x 4 bytes B, G, R, 255: on little-endian machines the 0xffRRGGBB words Qt's RGB32
    format is (what its raster engine draws fastest: no conversion per paint)."""
    if sys.byteorder == "little":
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA)
    out = np.empty((*bgr.shape[:2], 4), np.uint8)
    out[..., 0], out[..., 1:] = 255, bgr[..., ::-1]  # big-endian words: 0xff, R, G, B
    return out


def decode_packet(
    packet: np.ndarray, request: DecodeRequest, size: tuple[int, int] | None = None
) -> tuple[np.ndarray, np.ndarray | None, tuple[int, int]] | None:
    """A JPEG packet -> (RGB, the display pixels or None, the JPEG's own (width, height)),
    decoded 1/2, 1/4 or 1/8 smaller where that still leaves `request.min_side`; None when it
    does not decode. `size`: the JPEG's size when already known."""
    data = packet.reshape(-1)
    if size is None:
        size = jpeg_size(data[:HEADER_BYTES].tobytes()) or jpeg_size(data.tobytes())
    factor = 1
    if size is not None and request.min_side:
        factor = reduction_factor(max(size), request.min_side)
    bgr = cv2.imdecode(data, REDUCED[factor] if factor > 1 else cv2.IMREAD_COLOR)
    if bgr is None:
        return None
    if size is None:
        size = (bgr.shape[1], bgr.shape[0])
    display = bgr_to_display(bgr) if request.display else None
    return to_rgb_uint8(bgr), display, size


class Grab:
    """One frame read from the source and not decoded yet.

    `decode(request)` gives the Frame (None: it does not decode). A JPEG packet may be decoded
    at any time, on any thread (again, bigger: `redecode`); any other frame only during the
    capture's `on_grab` call, on the capture thread (the next grab replaces it).
    """

    def __init__(
        self,
        index: int,
        source: str,
        timestamp: float,
        pts_ms: float | None,
        *,
        packet: np.ndarray | None = None,
        retrieve: Callable[[], np.ndarray | None] | None = None,
    ) -> None:
        self.index = index
        self.source = source
        self.timestamp = timestamp  # time.monotonic() when it was read, before any decoding
        self.pts_ms = pts_ms
        self.packet = packet  # the JPEG, when the source gives packets
        self._retrieve = retrieve  # the picture, from the capture (until it moves on)
        self._size: tuple[int, int] | None = None
        self._decoded: Frame | None = None

    @property
    def size(self) -> tuple[int, int] | None:
        """The JPEG's (width, height), from its header (None: not a packet, or unreadable)."""
        if self._size is None and self.packet is not None:
            self._size = jpeg_size(self.packet.reshape(-1)[:HEADER_BYTES].tobytes())
        return self._size

    def decode(self, request: DecodeRequest = FULL) -> Frame | None:
        """Decoded once: a second call that the first one satisfies gives the same Frame."""
        done = self._decoded
        if done is not None and _satisfies(done, request):
            return done
        if self.packet is not None:
            decoded = decode_packet(self.packet, request, self.size)
            if decoded is None:
                return None
            frame = _frame(self.index, self.source, self.timestamp, self.pts_ms, decoded, self.packet)
        else:
            if self._retrieve is None:
                raise RuntimeError(f"{self.source} frame {self.index}: decoded after its capture moved on")
            bgr = self._retrieve()
            if bgr is None:
                return None
            try:
                rgb = to_rgb_uint8(bgr)
            except ValueError:  # not a picture (a backend's raw buffer): nothing to show
                return None
            display = bgr_to_display(bgr) if request.display and bgr.ndim == 3 and bgr.shape[2] == 3 else None
            frame = Frame(self.index, rgb, self.source, self.timestamp, self.pts_ms, display=display)
        self._decoded = frame
        return frame

    def expire(self) -> None:
        """The capture grabs the next frame: a frame that is not a packet can no longer be decoded."""
        self._retrieve = None


def _frame(
    index: int,
    source: str,
    timestamp: float,
    pts_ms: float | None,
    decoded: tuple[np.ndarray, np.ndarray | None, tuple[int, int]],
    packet: np.ndarray,
) -> Frame:
    rgb, display, size = decoded
    reduced = (rgb.shape[1], rgb.shape[0]) != size
    return Frame(
        index,
        rgb,
        source,
        timestamp,
        pts_ms,
        original_size=size if reduced else None,
        display=display,
        encoded=packet if reduced else None,  # kept only to decode it bigger later
    )


def _satisfies(frame: Frame, request: DecodeRequest) -> bool:
    if request.display and frame.display is None:
        return False
    if frame.original_size is None:
        return True  # full size
    return request.min_side is not None and max(frame.width, frame.height) >= request.min_side


def redecode(frame: Frame, min_side: int | None) -> Frame | None:
    """`frame` decoded again from its packet with at least `min_side` on its longest side (None:
    full size), for a view zoomed in past it; None when it has no packet, already is that big,
    or does not decode."""
    if frame.encoded is None or frame.original_size is None:
        return None
    wanted = max(frame.original_size) if min_side is None else min(min_side, max(frame.original_size))
    if max(frame.width, frame.height) >= wanted:
        return None
    request = DecodeRequest(min_side, display=frame.display is not None)
    decoded = decode_packet(frame.encoded, request, frame.original_size)
    if decoded is None:
        return None
    return _frame(frame.index, frame.source, frame.timestamp, frame.pts_ms, decoded, frame.encoded)


def side_for_scale(size: tuple[int, int], scale: float) -> int:
    """The longest side a picture of `size` needs to show `scale` device pixels per pixel."""
    return max(1, math.ceil(max(size) * min(scale, 1.0)))
