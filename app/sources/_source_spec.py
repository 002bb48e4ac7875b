"""Classify a live source (camera index, file path, stream URL) and open it with OpenCV."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import cv2
import numpy as np

SourceKind = Literal["camera", "file", "url"]

URL_RE = re.compile(r"^(rtsps?|rtmps?|https?|udp|tcp|srt)://", re.IGNORECASE)

# Bounds how long FFmpeg may block opening or reading a network stream (milliseconds).
STREAM_TIMEOUT_MS = 5000


class CaptureLike(Protocol):
    """The part of cv2.VideoCapture the live capture uses (a seam for tests)."""

    def isOpened(self) -> bool: ...
    def read(self) -> tuple[bool, np.ndarray | None]: ...
    def grab(self) -> bool: ...
    def retrieve(self) -> tuple[bool, np.ndarray | None]: ...
    def get(self, prop_id: int) -> float: ...
    def set(self, prop_id: int, value: float) -> bool: ...
    def release(self) -> None: ...


@dataclass(frozen=True)
class SourceSpec:
    kind: SourceKind
    value: int | str  # camera index, file path or URL
    label: str  # for messages: "camera 0", "video file x.mp4", "stream rtsp://..."

    @property
    def name(self) -> str:
        """What goes into Frame.source."""
        return f"camera {self.value}" if self.kind == "camera" else str(self.value)


def describe_source(source: int | str | Path) -> SourceSpec:
    """Classify without touching the device or the network, and without raising for missing files."""
    if isinstance(source, bool):
        raise TypeError("source must be a camera index, a path or a URL, not a bool")
    if isinstance(source, int):
        return SourceSpec("camera", source, f"camera {source}")
    text = str(source).strip()
    if text.isdigit():
        return SourceSpec("camera", int(text), f"camera {int(text)}")
    if URL_RE.match(text):
        return SourceSpec("url", text, f"stream {text}")
    return SourceSpec("file", text, f"video file {text}")


def open_capture(spec: SourceSpec, resolution: tuple[int, int] | None = None) -> cv2.VideoCapture:
    """Open the capture (may block for network streams); the caller checks isOpened()."""
    if spec.kind == "camera":
        api = cv2.CAP_V4L2 if sys.platform.startswith("linux") else cv2.CAP_ANY
        cap = cv2.VideoCapture(int(spec.value), api)
        if cap.isOpened():
            # Ask the driver for a 1-frame buffer (not all backends honour it; the thread
            # that reads continuously is what really keeps latency down).
            cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
            if resolution is not None:
                cap.set(cv2.CAP_PROP_FRAME_WIDTH, resolution[0])
                cap.set(cv2.CAP_PROP_FRAME_HEIGHT, resolution[1])
        return cap
    if spec.kind == "url":
        params = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
            STREAM_TIMEOUT_MS,
            cv2.CAP_PROP_READ_TIMEOUT_MSEC,
            STREAM_TIMEOUT_MS,
        ]
        return cv2.VideoCapture(str(spec.value), cv2.CAP_FFMPEG, params)
    return cv2.VideoCapture(str(spec.value))


def open_failure_reason(spec: SourceSpec) -> str:
    """The best cause we can give for isOpened() being False (OpenCV itself says nothing)."""
    if spec.kind == "camera":
        node = Path(f"/dev/video{spec.value}")
        if sys.platform.startswith("linux") and not node.exists():
            return f"no such device ({node} does not exist)"
        return "the device could not be opened (busy, unplugged or not a capture device)"
    if spec.kind == "file":
        path = Path(str(spec.value))
        if not path.exists():
            return "no such file"
        if not path.is_file():
            return "not a file"
        return "OpenCV cannot decode it (unsupported format or corrupt file)"
    return f"connection failed, timed out after {STREAM_TIMEOUT_MS / 1000:g} s, or the stream is unsupported"
