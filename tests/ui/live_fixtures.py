"""Helpers for the live preview tests: generated videos, head position read back from a picture."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
from PySide6.QtGui import QImage

from app.ui.view.image_view import ImageView
from app.ui.viewer import Viewer
from tests.media import BACKGROUND_RGB

LIVE_THREAD_PREFIXES = ("LiveCapture[", "Recorder[")


def make_slow_video(path: Path, frames: int, delay_ms: int, fps: float = 30.0) -> Path:
    """160x120 MJPG frames whose pixel [0,0] makes slow_faces take about `delay_ms` each."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (160, 120))
    for i in range(frames):
        image = np.zeros((120, 160, 3), np.uint8)
        image[:8, :8, 2] = delay_ms // 10  # BGR: red = pixel [0,0,0] once converted to RGB
        cv2.putText(image, str(i), (40, 80), cv2.FONT_HERSHEY_SIMPLEX, 1.5, (255, 255, 255), 2)
        writer.write(image)
    writer.release()
    return path


def recorded_frames(path: Path) -> list[np.ndarray]:
    """Every frame of a recorded video (BGR)."""
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, bgr = cap.read()
        if not ok:
            break
        frames.append(bgr)
    cap.release()
    return frames


def live_threads() -> list[str]:
    """Names of the capture and recorder threads still alive."""
    return [t.name for t in threading.enumerate() if t.name.startswith(LIVE_THREAD_PREFIXES)]


def shown_picture(view: ImageView) -> np.ndarray:
    """The picture the view shows (RGB, at the size it was decoded at)."""
    image = view.shown_image().convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    buffer = np.frombuffer(image.constBits(), np.uint8).reshape(h, image.bytesPerLine())
    return buffer[:, : w * 3].reshape(h, w, 3).copy()


def head_left(picture: np.ndarray) -> int:
    """x of the first column that is not the plain background of tests/media.face_frame."""
    diff = np.abs(picture.astype(np.int16) - np.array(BACKGROUND_RGB, np.int16)).max(axis=2)
    columns = np.flatnonzero((diff > 40).sum(axis=0) > 5)
    return int(columns[0]) if columns.size else -1


def box_rects(viewer: Viewer) -> list[tuple[float, float, float, float]]:
    rects = []
    for item in viewer.window.view.box_items():
        r = item.mapRectToScene(item.rect())
        rects.append((r.left(), r.top(), r.right(), r.bottom()))
    return rects
