"""What painting a live frame costs the GUI thread: the view as it was (each 1080p frame copied
into a QPixmap), as it is (a half-size decode's display buffer wrapped in a QImage, no copy),
and the same in an OpenGL-backed viewport (QOpenGLWidget).

A real ImageView in a real window (offscreen, or under xvfb-run with QT_QPA_PLATFORM=xcb,
where OpenGL is Mesa's) shows a new frame every 16 ms for --seconds; the process's CPU time per
frame painted is printed for each way, the ways alternated --rounds times. OpenGL needs a
platform with it (xcb, not offscreen): otherwise it is left out, and said so.

Run: xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb \\
     .venv/bin/python tests/bench/bench_view_paint.py [--seconds 5] [--rounds 2]
--smoke: 0.3 s per way, one round.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cv2
import numpy as np
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QGuiApplication, QImage, QPixmap
from PySide6.QtWidgets import QApplication, QGraphicsPixmapItem

from app.sources.grabs import bgr_to_display
from app.ui.view.image_view import ImageView
from app.ui.view.picture_item import PictureItem

SOURCE = (1920, 1080)
VIEW = (886, 484)  # the live view in a 1280x800 window


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def frames() -> list[np.ndarray]:
    """Four different BGR 1080p frames with detail (noise over gradients)."""
    rng = np.random.default_rng(1)
    x = np.linspace(0, 255, SOURCE[0], dtype=np.float32)[None, :, None]
    return [
        np.clip(x + rng.normal(0, 30, (SOURCE[1], SOURCE[0], 3)), 0, 255).astype(np.uint8) for _ in range(4)
    ]


def measure(way: str, bgr: list[np.ndarray], seconds: float) -> tuple[float, int]:
    """(CPU ms per frame painted, frames painted) for one way of showing the frames."""
    view = ImageView()
    view.resize(*VIEW)
    if way == "opengl":
        from PySide6.QtOpenGLWidgets import QOpenGLWidget

        view.setViewport(QOpenGLWidget())
    counter = PaintCounter()
    view.viewport().installEventFilter(counter)
    view.show()
    legacy = QGraphicsPixmapItem()
    if way == "pixmap copy (before)":
        view.scene().addItem(legacy)
        pictures = [np.ascontiguousarray(b[..., ::-1]) for b in bgr]  # full-size RGB frames
    else:
        half = [cv2.resize(b, (SOURCE[0] // 2, SOURCE[1] // 2), interpolation=cv2.INTER_AREA) for b in bgr]
        pictures = [bgr_to_display(h) for h in half]
    view.set_image(pictures[0], size=SOURCE)  # the scene and the fitted zoom
    if way == "pixmap copy (before)":
        for item in view.scene().items():
            if isinstance(item, PictureItem):
                item.hide()  # the old item alone draws
    shown = {"n": 0}

    def next_frame() -> None:
        picture = pictures[shown["n"] % len(pictures)]
        shown["n"] += 1
        if way == "pixmap copy (before)":  # what ImageView did per frame: a copy, then a pixmap
            h, w = picture.shape[:2]
            image = QImage(picture.data, w, h, picture.strides[0], QImage.Format.Format_RGB888).copy()
            legacy.setPixmap(QPixmap.fromImage(image))
        else:
            view.set_image(picture, size=SOURCE)

    app = QApplication.instance()
    assert app is not None
    timer = QTimer()
    timer.setInterval(16)
    timer.timeout.connect(next_frame)
    for _ in range(10):  # settle: the first paints set things up
        app.processEvents()
    painted0, cpu0, deadline = counter.paints, time.process_time(), time.monotonic() + seconds
    timer.start()
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    painted = counter.paints - painted0
    cpu_ms = (time.process_time() - cpu0) * 1000
    view.close()
    view.deleteLater()
    app.processEvents()
    return cpu_ms / max(painted, 1), painted


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.rounds = 0.3, 1
    QApplication.instance() or QApplication([sys.argv[0]])
    platform = QGuiApplication.platformName()
    ways = ["pixmap copy (before)", "QImage over the buffer"]
    if platform == "offscreen":
        print("OpenGL viewport left out: the offscreen platform has no OpenGL (use xcb under xvfb-run)")
    else:
        ways.append("opengl")
    bgr = frames()
    load = os.getloadavg()
    print(
        f"a live view {VIEW[0]}x{VIEW[1]} showing 1920x1080 frames every 16 ms, platform {platform}, "
        f"load {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}, {os.cpu_count()} CPUs"
    )
    for round_ in range(1, args.rounds + 1):
        for way in ways:
            cpu, painted = measure(way, bgr, args.seconds)
            print(f"round {round_}: {way:<24} {cpu:6.2f} ms CPU per frame painted ({painted} painted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
