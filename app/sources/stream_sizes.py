"""The frame size a video's own bitstream announces, packet by packet: how a size change in the
middle of a stream is seen.

Why: OpenCV's FFmpeg reader sets its converter up for the size the container declares and
never again; after a change it hands back its previous picture, unchanged, for every later
frame (FFmpeg only logs "Slice parameters ... are invalid"), so a reader trusting it would
report stale pictures as new frames. A second capture in raw mode (encoded packets, no
decoding: cheap) reads the sequence headers: MPEG-1/2 sequence headers, MPEG-4 Part 2 video
object layers, H.264 sequence parameter sets, JPEG frame headers (MJPG), VP8 key frames.
Other codecs are not read (the size is then taken as the container says).
"""

from __future__ import annotations

import cv2
import numpy as np

from app.sources.image_header import jpeg_size

MPEG12 = {"MPG1", "MPG2", "MPEG", "PIM1", "MPEG1", "MPEG2"}
MPEG4 = {"FMP4", "MP4V", "XVID", "DIVX", "DX50", "DIV3", "M4S2", "3IV2"}
H264 = {"H264", "AVC1", "X264", "AVC3", "DAVC"}
MJPEG = {"MJPG", "MJPA", "JPEG", "AVRN"}
VP8 = {"VP80"}
READ_CODECS = MPEG12 | MPEG4 | H264 | MJPEG | VP8


class _Bits:
    """An MSB-first bit reader (with exp-Golomb codes for H.264)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def u(self, n: int) -> int:
        value = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3] if (self.pos >> 3) < len(self.data) else 0
            value = (value << 1) | ((byte >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return value

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise ValueError("bad exp-Golomb code")
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        k = self.ue()
        return (k + 1) // 2 if k % 2 else -(k // 2)


def _unescape(nal: bytes) -> bytes:
    """An H.264 NAL unit's payload without its emulation-prevention bytes (00 00 03)."""
    return nal.replace(b"\x00\x00\x03", b"\x00\x00")


def h264_sps_size(sps: bytes) -> tuple[int, int] | None:
    """(width, height) from an H.264 sequence parameter set (its NAL header byte included)."""
    try:
        b = _Bits(_unescape(sps[1:]))
        profile = b.u(8)
        b.u(16)  # constraint flags, level
        b.ue()  # seq_parameter_set_id
        chroma_format = 1
        if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
            chroma_format = b.ue()
            if chroma_format == 3:
                b.u(1)  # separate_colour_plane_flag
            b.ue()
            b.ue()  # bit depths
            b.u(1)  # qpprime_y_zero_transform_bypass_flag
            if b.u(1):  # seq_scaling_matrix_present_flag
                for i in range(8 if chroma_format != 3 else 12):
                    if b.u(1):
                        last, nxt = 8, 8
                        for _ in range(16 if i < 6 else 64):
                            if nxt:
                                nxt = (last + b.se() + 256) % 256
                            last = nxt or last
        b.ue()  # log2_max_frame_num_minus4
        poc_type = b.ue()
        if poc_type == 0:
            b.ue()
        elif poc_type == 1:
            b.u(1)
            b.se()
            b.se()
            for _ in range(b.ue()):
                b.se()
        b.ue()  # max_num_ref_frames
        b.u(1)  # gaps_in_frame_num_value_allowed_flag
        width_mbs, height_units = b.ue() + 1, b.ue() + 1
        frame_mbs_only = b.u(1)
        if not frame_mbs_only:
            b.u(1)  # mb_adaptive_frame_field_flag
        b.u(1)  # direct_8x8_inference_flag
        width, height = width_mbs * 16, height_units * 16 * (2 - frame_mbs_only)
        if b.u(1):  # frame_cropping_flag
            left, right, top, bottom = b.ue(), b.ue(), b.ue(), b.ue()
            crop_x = 2 if chroma_format in (1, 2) else 1
            crop_y = (2 if chroma_format == 1 else 1) * (2 - frame_mbs_only)
            width -= crop_x * (left + right)
            height -= crop_y * (top + bottom)
        return (width, height) if width > 0 and height > 0 else None
    except (IndexError, ValueError):
        return None


def _h264_size(packet: bytes) -> tuple[int, int] | None:
    # Annex B (start codes: MPEG-TS, raw .h264) or length-prefixed (MP4, MKV); told apart by
    # the packet's first bytes (a length can look like a start code). A NAL of type 7 is an SPS.
    if packet.startswith((b"\x00\x00\x01", b"\x00\x00\x00\x01")):
        start = packet.find(b"\x00\x00\x01")
        while start >= 0:
            if packet[start + 3 : start + 4] and packet[start + 3] & 0x1F == 7:
                return h264_sps_size(packet[start + 3 :])
            start = packet.find(b"\x00\x00\x01", start + 3)
        return None
    i = 0
    while i + 5 <= len(packet):
        length = int.from_bytes(packet[i : i + 4], "big")
        if length <= 0 or i + 4 + length > len(packet):
            break
        if packet[i + 4] & 0x1F == 7:
            return h264_sps_size(packet[i + 4 : i + 4 + length])
        i += 4 + length
    return None


def _mpeg12_size(packet: bytes) -> tuple[int, int] | None:
    at = packet.find(b"\x00\x00\x01\xb3")
    if at < 0 or at + 7 > len(packet):
        return None
    bits = int.from_bytes(packet[at + 4 : at + 7], "big")
    return (bits >> 12, bits & 0xFFF) if bits >> 12 and bits & 0xFFF else None


def mpeg4_vol_size(vol: bytes) -> tuple[int, int] | None:
    """(width, height) of an MPEG-4 Part 2 video object layer (the bytes after its start code)."""
    try:
        b = _Bits(vol)
        b.u(1)  # random_accessible_vol
        b.u(8)  # video_object_type_indication
        verid = 1
        if b.u(1):  # is_object_layer_identifier
            verid = b.u(4)
            b.u(3)
        if b.u(4) == 15:  # aspect_ratio_info: extended PAR
            b.u(16)
        if b.u(1):  # vol_control_parameters
            b.u(3)  # chroma_format, low_delay
            if b.u(1):  # vbv_parameters
                b.u(79)
        shape = b.u(2)
        if shape == 3 and verid != 1:
            b.u(4)
        b.u(1)  # marker
        resolution = b.u(16)
        b.u(1)  # marker
        if b.u(1):  # fixed_vop_rate
            b.u(max(1, (resolution - 1).bit_length()))
        if shape != 0:  # not rectangular: no size here
            return None
        b.u(1)
        width = b.u(13)
        b.u(1)
        height = b.u(13)
        return (width, height) if width and height else None
    except (IndexError, ValueError):
        return None


def _mpeg4_size(packet: bytes) -> tuple[int, int] | None:
    start = packet.find(b"\x00\x00\x01")
    while start >= 0 and start + 4 <= len(packet):
        if 0x20 <= packet[start + 3] <= 0x2F:  # a video object layer start code
            return mpeg4_vol_size(packet[start + 4 :])
        start = packet.find(b"\x00\x00\x01", start + 3)
    return None


def _vp8_size(packet: bytes) -> tuple[int, int] | None:
    if len(packet) < 10 or packet[0] & 1 or packet[3:6] != b"\x9d\x01\x2a":
        return None  # not a key frame
    w, h = int.from_bytes(packet[6:8], "little") & 0x3FFF, int.from_bytes(packet[8:10], "little") & 0x3FFF
    return (w, h) if w and h else None


def packet_size(packet: bytes, codec: str) -> tuple[int, int] | None:
    """The frame size announced in one encoded packet of `codec` (a FOURCC), None when this
    packet announces none (most do not: only key frames or sequence starts carry it)."""
    if codec in MJPEG:
        return jpeg_size(packet)
    if codec in MPEG12:
        return _mpeg12_size(packet)
    if codec in MPEG4:
        return _mpeg4_size(packet)
    if codec in H264:
        return _h264_size(packet)
    if codec in VP8:
        return _vp8_size(packet)
    return None


class StreamSizes:
    """The size the bitstream announces for each frame, read from a second capture's packets
    in step with the decoded frames (one packet per frame). Used by one reading thread."""

    def __init__(self, path: str, codec: str) -> None:
        self.codec = codec
        self._cap: cv2.VideoCapture | None = cv2.VideoCapture(path)
        if not self._cap.isOpened() or not self._cap.set(cv2.CAP_PROP_FORMAT, -1):
            self.close()
        self._packets = 0
        self.current: tuple[int, int] | None = None  # the size announced last
        self.first: tuple[int, int] | None = None  # the first size announced

    @classmethod
    def watch(cls, path: str, codec: str) -> StreamSizes | None:
        """A watch of `path`'s packets, or None for a codec whose headers are not read."""
        if codec not in READ_CODECS:
            return None
        sizes = cls(path, codec)
        return sizes if sizes._cap is not None else None

    def size_at(self, frame: int) -> tuple[int, int] | None:
        """The size in force for frame `frame` (frames are asked for in order)."""
        while self._cap is not None and self._packets <= frame:
            ok, packet = self._cap.read()
            if not ok or packet is None:
                self.close()
                break
            self._packets += 1
            size = packet_size(np.asarray(packet).tobytes(), self.codec)
            if size is not None:
                self.current = size
                self.first = self.first or size
        return self.current

    def close(self) -> None:
        cap, self._cap = self._cap, None
        if cap is not None:
            cap.release()
