"""Read every frame of a video file, in order, for offline inference (no frame is skipped)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import cv2

from app.sources.frame import Frame
from app.sources.images import to_rgb_uint8


class VideoFileReader:
    """Iterate a video file's frames as RGB `Frame`s with consecutive indices.

    The file is opened in the constructor (ValueError naming the file if OpenCV
    cannot open it). The capture is released by the thread that iterates, when
    the iteration ends or is closed; `close()` from another thread only asks for it.
    """

    def __init__(self, path: str | Path) -> None:
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
        # Guards the hand-over between close() and a reading thread: release() must not
        # run while another thread is inside read() (it can crash OpenCV's backends).
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._close_requested = False

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
                frame = Frame(self._frames_read, to_rgb_uint8(bgr), source, time.monotonic(), pts)
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
