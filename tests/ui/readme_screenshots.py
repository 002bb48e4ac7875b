"""The README's screenshots: the real windows at 1280x720 with a window manager's frame
(Xvfb and openbox, started here), against the embedded server.

    .venv/bin/python -m tests.ui.readme_screenshots resources/

Writes screenshot-start.png (the first screen), screenshot.png (a batch: the picture, its
boxes listed, the thumbnails and the batch's statistics), screenshot-live.png (live video
being recorded) and screenshot-compare.png (two versions of the test model fixed_versions,
served with the bundled models, side by side). Each is the whole screen: the window as a
user sees it, title bar included. Settings go to a temporary folder: the user's own are
never touched.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import qasync
from PySide6.QtWidgets import QApplication
from skimage import data

from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.ui.analysis.scoped_stats import Scope
from app.ui.compare.compare_window import CompareChoice
from app.ui.main_window import Mode
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video
from tests.ui.window_frames import framed
from tests.ui.x_display import x_display

SIZE = (1280, 720)
TEST_MODELS = Path(__file__).resolve().parents[1] / "models"
IN_DISPLAY = "README_SCREENSHOTS_DISPLAY"  # set for the run inside Xvfb + openbox


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


def grab(path: Path) -> None:
    """The whole screen: the window with its title bar and borders, as a user sees it."""
    QApplication.processEvents()
    screen = QApplication.primaryScreen()
    assert screen is not None
    screen.grabWindow(0).save(str(path))
    print(f"wrote {path}", flush=True)


def repository_with(root: Path, *test_models: str) -> Path:
    """The bundled models plus some of tests/models, as one repository of symlinks."""
    root.mkdir(parents=True, exist_ok=True)
    for model in sorted(model_repository().iterdir()):
        if (model / "config.pbtxt").is_file():
            (root / model.name).symlink_to(model, target_is_directory=True)
    for name in test_models:
        (root / name).symlink_to(TEST_MODELS / name, target_is_directory=True)
    return root


async def shoot(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    viewer = Viewer(ViewerOptions(), executor)
    window = viewer.window
    viewer.start()  # shows the window, fitted to the screen with its frame
    await until(lambda: viewer.connection.state == "connected")
    await framed(window)
    await asyncio.sleep(0.5)
    grab(out / "screenshot-start.png")

    viewer.open_paths([str(sample_folder(work / "shoot"))])
    await until(lambda: not viewer.runner.active() and viewer.runner.latest_counts() is not None)
    pair = next(k for k in list(window.strip.keys()) if k.endswith("pair.jpg"))
    viewer.browser.select(pair)
    await until(lambda: len(window.view.box_items()) == 2)  # the pair's own boxes are drawn
    window.detections_panel.refresh()
    window.detections_panel.select(1)
    viewer.stats.poll()
    await asyncio.sleep(1.0)
    grab(out / "screenshot.png")

    video = work / "walk.mp4"
    make_face_video(video, frames=600, fps=30, size=(640, 480))
    viewer.live_ui.open_source(str(video))
    await until(lambda: window.mode is Mode.LIVE and viewer.live.meter.shown >= 30)
    viewer.live_ui.record_to(str(work / "recording.mp4"))
    window.stats_panel.set_scope(Scope.LIVE)
    await asyncio.sleep(3.5)  # a few seconds of statistics and of the REC timer
    grab(out / "screenshot-live.png")

    viewer.request_close()
    await viewer.closed.wait()


async def shoot_compare(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    """Analyse > Compare with…: fixed_versions v1 against v2 on two photographs."""
    server = EmbeddedServer(repository_with(work / "compare-repository", "fixed_versions"))
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(executor, server.start)
    try:
        viewer = Viewer(ViewerOptions(urls=[server.grpc_url], model="face_detector"), executor)
        viewer.start()
        await until(lambda: viewer.connection.state == "connected")
        choice = CompareChoice("fixed_versions", "1", "fixed_versions", "2", [])
        assert await viewer.analysis.start_compare(choice)
        compare = viewer.analysis.compare
        photos = work / "compare"
        photos.mkdir()
        for name, rgb in (("astronaut.png", data.astronaut()), ("coffee.png", data.coffee())):
            cv2.imwrite(str(photos / name), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        compare.open_paths([str(photos / "astronaut.png"), str(photos / "coffee.png")])
        await until(lambda: compare.batch is not None and compare.batch.finished and len(compare.pairs) == 2)
        await until(lambda: compare.shown_key is not None)
        await framed(compare.window)
        await asyncio.sleep(1.0)
        grab(out / "screenshot-compare.png")
        viewer.request_close()
        await viewer.closed.wait()
    finally:
        await loop.run_in_executor(executor, server.stop)


async def shoot_all(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    await shoot(out, executor, work)
    await shoot_compare(out, executor, work)


def main(out_dir: str) -> None:
    if os.environ.get(IN_DISPLAY) != "1":
        # A screen of the README's size with a window manager, then this again inside it.
        with x_display(*SIZE) as env:
            env[IN_DISPLAY] = "1"
            subprocess.run(
                [sys.executable, "-m", "tests.ui.readme_screenshots", out_dir], env=env, check=True
            )
        return
    out = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(Path(tmp) / "settings")
        app = QApplication.instance() or QApplication(sys.argv)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        executor = ThreadPoolExecutor(4)
        try:
            loop.run_until_complete(shoot_all(out, executor, Path(tmp)))
        finally:
            executor.shutdown(wait=True)
            loop.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp")
