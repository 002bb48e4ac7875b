"""Find the cameras attached to this machine and parse a user's source text."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import cv2

from app.sources._source_spec import URL_RE


@dataclass(frozen=True)
class CameraInfo:
    index: int
    name: str
    width: int
    height: int


def _candidate_indices(max_index: int) -> list[int]:
    if sys.platform.startswith("linux"):
        # Only device nodes that exist: probing absent indices makes OpenCV log and wait.
        return [i for i in range(max_index) if Path(f"/dev/video{i}").exists()]
    return list(range(max_index))


def _device_name(index: int) -> str:
    sysfs = Path(f"/sys/class/video4linux/video{index}/name")
    try:
        name = sysfs.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        name = ""
    return name or f"Camera {index}"


def list_cameras(max_index: int = 8) -> list[CameraInfo]:
    """Cameras that open and deliver a frame, with their default resolution (opened briefly)."""
    api = cv2.CAP_V4L2 if sys.platform.startswith("linux") else cv2.CAP_ANY
    found: list[CameraInfo] = []
    for index in _candidate_indices(max_index):
        cap = cv2.VideoCapture(index, api)
        try:
            # Metadata-only V4L2 nodes open but never give a frame: require one.
            if not cap.isOpened() or not cap.grab():
                continue
            width = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH))
            height = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
            found.append(CameraInfo(index, _device_name(index), width, height))
        finally:
            cap.release()
    return found


def parse_source(text: str) -> int | str:
    """Digits -> camera index; an existing file -> its path; a stream URL -> the URL; else ValueError."""
    value = text.strip()
    if not value:
        raise ValueError("empty source: give a camera index (e.g. 0), a video file or a stream URL")
    if value.isdigit():
        return int(value)
    if URL_RE.match(value):
        return value
    path = Path(value).expanduser()
    if path.is_file():
        return str(path)
    if path.exists():
        raise ValueError(f"{value} is not a file: give a camera index, a video file or a stream URL")
    if "://" in value:
        scheme = value.split("://", 1)[0]
        raise ValueError(
            f"unsupported URL scheme {scheme!r} in {value}: use rtsp://, rtmp://, http(s)://, udp:// or srt://"
        )
    raise ValueError(f"{value} is neither a camera index, an existing video file nor a stream URL")
