"""Read every frame of a video file, in order, for offline inference (no frame is skipped).

A frame OpenCV cannot really decode (after the stream's frame size changed: it keeps handing
back its last picture at the first size) is a `FrameFailure` naming the frame and the cause,
never that stale picture: see app.sources.stream_sizes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import cv2

from app.sources.frame import Frame
from app.sources.image_header import jpeg_size
from app.sources.images import REDUCED, reduction_factor, to_rgb_uint8
from app.sources.stream_sizes import StreamSizes


@dataclass(frozen=True)
class FrameFailure:
    """A frame that was read but cannot be used: its index and why."""

    index: int
    error: str


class VideoFileReader:
    """Iterate a video file's frames as RGB `Frame`s with consecutive indices.

    The file is opened in the constructor (ValueError naming the file if OpenCV
    cannot open it). The capture is released by the thread that iterates, when
    the iteration ends or is closed; `close()` from another thread only asks for it.
    """

    def __init__(self, path: str | Path, min_side: int | None = None) -> None:
        """`min_side`: the frames need not be bigger than this on their longest side: an
        MJPG video is then decoded at 1/2, 1/4 or 1/8 of its size where that still leaves
        `min_side` (each frame is a JPEG the decoder can shrink for 2-3x less work)."""
        self.path = Path(path)
        if not self.path.is_file():
            raise ValueError(f"cannot open video file {self.path}: no such file")
        self._cap: cv2.VideoCapture | None = cv2.VideoCapture(str(self.path))
        if not self._cap.isOpened():
            self._cap.release()
            self._cap = None
            raise ValueError(
                f"cannot open video file {self.path}: OpenCV cannot decode it (unsupported or corrupt)"
            )
        self._fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0)
        self._frame_count = max(int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0), 0)
        self._width = int(self._cap.get(cv2.CAP_PROP_FRAME_WIDTH) or 0)
        self._height = int(self._cap.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0)
        fourcc = int(self._cap.get(cv2.CAP_PROP_FOURCC) or 0)
        self._codec = fourcc.to_bytes(4, "little").decode("latin-1").strip("\x00 ").upper()
        self._frames_read = 0
        self._reduction = self._reduced_decoding(min_side)
        # Guards the hand-over between close() and a reading thread: release() must not
        # run while another thread is inside read() (it can crash OpenCV's backends).
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._close_requested = False

    def _reduced_decoding(self, min_side: int | None) -> int:
        """The JPEG reduction factor for an MJPG video (1: decode in full), switching the
        capture to raw packets when there is one."""
        assert self._cap is not None
        if not min_side or self._codec not in ("MJPG", "MJPA", "JPEG", "AVRN") or not self._width:
            return 1
        factor = reduction_factor(max(self._width, self._height), min_side)
        # Raw packets instead of decoded frames (FFmpeg backend); not every build can.
        if factor > 1 and self._cap.set(cv2.CAP_PROP_FORMAT, -1):
            return factor
        return 1

    @property
    def reduction(self) -> int:
        """1, or the factor frames are decoded smaller by (MJPG with min_side)."""
        return self._reduction

    @property
    def fps(self) -> float:
        """Nominal frame rate from the container (0.0 when unknown)."""
        return self._fps

    @property
    def frame_count(self) -> int:
        """Frame count from the container (an estimate for some formats; 0 when unknown)."""
        return self._frame_count

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return self._width, self._height

    @property
    def frames_read(self) -> int:
        return self._frames_read

    @property
    def released(self) -> bool:
        """The capture is closed (close() from another thread only asks: the reading thread
        releases it at its next step)."""
        with self._lock:
            return self._cap is None

    def __iter__(self) -> Iterator[Frame]:
        """The frames that could be read (see `items` for the failures too)."""
        for item in self.items():
            if isinstance(item, Frame):
                yield item

    def items(self) -> Iterator[Frame | FrameFailure]:
        """Every frame in order: a `Frame`, or a `FrameFailure` when that frame cannot be used
        (each counts in `frames_read`)."""
        with self._lock:
            if self._cap is None or self._close_requested:
                return
            if self._reader is not None:
                raise RuntimeError(f"{self.path} is already being read")
            self._reader = threading.current_thread()
            cap = self._cap
        source = str(self.path)
        # Decoded MJPG packets show their own size; other codecs' packets are read alongside.
        sizes = StreamSizes.watch(source, self._codec) if self._reduction == 1 else None
        changed_at: int | None = None
        try:
            while not self._close_requested:
                ok, bgr = cap.read()
                if not ok or bgr is None:
                    break
                pts = float(cap.get(cv2.CAP_PROP_POS_MSEC))
                index = self._frames_read
                self._frames_read += 1
                original = None
                if self._reduction > 1:  # a raw JPEG packet: decode it at the reduced size
                    packet = bgr.reshape(-1)
                    original = jpeg_size(packet[:65536].tobytes()) or (self._width, self._height)
                    bgr = cv2.imdecode(packet, REDUCED[self._reduction])
                    if bgr is None:
                        break
                    if (bgr.shape[1] > bgr.shape[0]) != (original[0] > original[1]):
                        original = (original[1], original[0])
                elif sizes is not None:
                    announced = sizes.size_at(index)
                    if announced is not None and announced != sizes.first:
                        changed_at = index if changed_at is None else changed_at
                        decoded = (bgr.shape[1], bgr.shape[0])
                        if sorted(decoded) != sorted(announced):
                            yield FrameFailure(index, self._size_change(index, sizes, changed_at))
                            continue
                    elif announced == sizes.first:
                        changed_at = None
                yield Frame(index, to_rgb_uint8(bgr), source, time.monotonic(), pts, original)
        finally:
            # Released here, in the reading thread, whether the loop ended or was abandoned.
            if sizes is not None:
                sizes.close()
            self._release()

    def _size_change(self, index: int, sizes: StreamSizes, changed_at: int) -> str:
        (w0, h0), (w1, h1) = sizes.first or (0, 0), sizes.current or (0, 0)
        return (
            f"{self.path} frame {index}: the video's frame size changed from {w0} x {h0} to "
            f"{w1} x {h1} at frame {changed_at}; OpenCV's decoder keeps the first size and "
            "cannot decode this frame"
        )

    def _release(self) -> None:
        with self._lock:
            cap, self._cap = self._cap, None
            self._reader = None
        if cap is not None:
            cap.release()

    def close(self) -> None:
        """Release now if no other thread is reading; otherwise the reader releases at its next frame."""
        with self._lock:
            self._close_requested = True
            reader = self._reader
        if reader is None or reader is threading.current_thread():
            self._release()

    def __enter__(self) -> VideoFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
