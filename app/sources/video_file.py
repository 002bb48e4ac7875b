"""Read every frame of a video file, in order, for offline inference (no frame is skipped)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import cv2

from app.sources.frame import Frame
from app.sources.images import REDUCED, reduction_factor, to_rgb_uint8


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
        fourcc = int(self._cap.get(cv2.CAP_PROP_FOURCC) or 0)
        codec = fourcc.to_bytes(4, "little").decode("latin-1").upper()
        if not min_side or codec not in ("MJPG", "MJPA", "JPEG", "AVRN") or not self._width:
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
        with self._lock:
            if self._cap is None or self._close_requested:
                return
            if self._reader is not None:
                raise RuntimeError(f"{self.path} is already being read")
            self._reader = threading.current_thread()
            cap = self._cap
        source = str(self.path)
        try:
            while not self._close_requested:
                ok, bgr = cap.read()
                if not ok or bgr is None:
                    break
                pts = float(cap.get(cv2.CAP_PROP_POS_MSEC))
                original = None
                if self._reduction > 1:  # a raw JPEG packet: decode it at the reduced size
                    packet = bgr.reshape(-1)
                    bgr = cv2.imdecode(packet, REDUCED[self._reduction])
                    if bgr is None:
                        break
                    original = (self._width, self._height)
                frame = Frame(self._frames_read, to_rgb_uint8(bgr), source, time.monotonic(), pts, original)
                self._frames_read += 1
                yield frame
        finally:
            # Released here, in the reading thread, whether the loop ended or was abandoned.
            self._release()

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
