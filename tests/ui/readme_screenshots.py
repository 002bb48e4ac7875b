"""The README's screenshots: the real window at 1280x720 against the embedded server.

    xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python -m tests.ui.readme_screenshots resources/

Writes screenshot.png (a batch: the picture, its boxes listed, the thumbnails and the batch's
statistics), screenshot-live.png (live video being recorded) and screenshot-start.png (the
first screen). Settings go to a temporary folder: the user's own are never touched.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import qasync
from PySide6.QtWidgets import QApplication
from skimage import data

from app.ui.analysis.scoped_stats import Scope
from app.ui.main_window import Mode
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video

SIZE = (1280, 720)


async def until(condition, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the window did not get there")
        await asyncio.sleep(0.05)


def sample_folder(root: Path) -> Path:
    """A small shoot: portraits (one with two faces) in sub-folders, and pictures without faces."""
    astronaut = data.astronaut()
    pictures = {
        "portraits/astronaut.jpg": astronaut,
        "portraits/pair.jpg": cv2.hconcat([astronaut[30:250, 120:340]] * 2),
        "portraits/close-up.jpg": cv2.resize(astronaut[0:300, 100:360], (390, 450)),
        "objects/coffee.jpg": data.coffee(),
        "objects/rocket.jpg": data.rocket(),
        "animals/cat.jpg": data.chelsea(),
    }
    for name, rgb in pictures.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    return root


def grab(viewer: Viewer, path: Path) -> None:
    QApplication.processEvents()
    viewer.window.grab().save(str(path))
    print(f"wrote {path}", flush=True)


async def shoot(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    viewer = Viewer(ViewerOptions(), executor)
    window = viewer.window
    viewer.start()  # shows the window
    window.resize(*SIZE)
    await until(lambda: viewer.connection.state == "connected")
    await asyncio.sleep(0.5)
    grab(viewer, out / "screenshot-start.png")

    viewer.open_paths([str(sample_folder(work / "shoot"))])
    await until(lambda: not viewer.runner.active() and viewer.runner.latest_counts() is not None)
    pair = next(k for k in list(window.strip.keys()) if k.endswith("pair.jpg"))
    viewer.browser.select(pair)
    await until(lambda: len(window.view.box_items()) == 2)  # the pair's own boxes are drawn
    window.detections_panel.refresh()
    window.detections_panel.select(1)
    viewer.stats.poll()
    await asyncio.sleep(1.0)
    grab(viewer, out / "screenshot.png")

    video = work / "walk.mp4"
    make_face_video(video, frames=600, fps=30, size=(640, 480))
    viewer.live_ui.open_source(str(video))
    await until(lambda: window.mode is Mode.LIVE and viewer.live.meter.shown >= 30)
    viewer.live_ui.record_to(str(work / "recording.mp4"))
    window.stats_panel.set_scope(Scope.LIVE)
    await asyncio.sleep(3.5)  # a few seconds of statistics and of the REC timer
    grab(viewer, out / "screenshot-live.png")

    viewer.request_close()
    await viewer.closed.wait()


def main(out_dir: str) -> None:
    out = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(Path(tmp) / "settings")
        app = QApplication.instance() or QApplication(sys.argv)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        executor = ThreadPoolExecutor(4)
        try:
            loop.run_until_complete(shoot(out, executor, Path(tmp)))
        finally:
            executor.shutdown(wait=True)
            loop.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp")
