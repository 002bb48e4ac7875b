"""The screenshots of the README and the docs site: the real windows at 1280x720 with a window
manager's frame (Xvfb and openbox, started here), against the embedded server.

    .venv/bin/python -m tests.ui.readme_screenshots docs/images/ [SHOT...]

Writes screenshot-start.png (the first screen), screenshot.png (a batch: the picture, its
boxes listed, the thumbnails and the batch's statistics), screenshot-evaluation.png (Evaluate
against labels: the worst image first, its labels dashed beside the model's boxes, the
confusion matrix), screenshot-live.png (live video being recorded), screenshot-compare.png
(two versions of the test model fixed_versions side by side), screenshot-tune.png (Tools >
Tune… after a tune of the test model fixed_cost) and screenshot-pipeline.png (face_mesh on the
portraits, Where the time goes showing its stages), screenshot-xray.png (the Request X-ray of
fixed_40ms's slowest request of a batch), screenshot-wall.png and screenshot-wall-focused.png
(a wall of four streams counting with lines and zones, a heat map, the Events panel; one of
them in the single view), into docs/images/ when no folder is given.
SHOT: `window`, `compare`, `tune`, `pipeline`, `xray` or `wall` (default all). Each is the whole screen: the
window as a user sees it, title bar included. Settings go to a temporary folder: the user's
own are never touched.
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
import numpy as np
import qasync
from PySide6.QtWidgets import QApplication
from skimage import data

from app.analytics.zones_file import LineSpec, ZonesConfig, ZoneSpec
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.ui.analysis.scoped_stats import Scope
from app.ui.compare.compare_window import CompareChoice
from app.ui.evaluation.evaluate_dialog import EvaluationChoice
from app.ui.main_window import Mode
from app.ui.qt_app import IO_WORKERS
from app.ui.viewer import Viewer, ViewerOptions
from tests.evaluation_data import Img, Obj, face_images, write_dataset
from tests.media import back_and_forth, face_box, head_image, make_crossing_video, make_face_video
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


def labelled_faces(root: Path) -> Path:
    """A Pascal VOC dataset of the astronaut's head pasted at several sizes, and a group picture
    with a face too small for the detector (a miss) and one nobody labelled (a false positive)."""
    canvas = np.full((480, 640, 3), (210, 200, 190), np.uint8)
    objects = []
    for (x, y), scale, labelled in (
        ((30, 40), 0.9, True),
        ((400, 60), 0.6, True),
        ((250, 330), 0.22, True),
        ((430, 280), 0.75, False),
    ):
        head = cv2.cvtColor(head_image(scale), cv2.COLOR_RGB2BGR)
        canvas[y : y + head.shape[0], x : x + head.shape[1]] = head
        if labelled:
            objects.append(Obj("face", tuple(float(v) for v in face_box((x, y), scale))))
    images = [*face_images(), Img("group.png", 640, 480, objects, canvas)]
    dataset, _ = write_dataset("voc", root, images, ["face"])
    return dataset


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

    await viewer.evaluation.start(EvaluationChoice(str(labelled_faces(work / "faces"))))
    evaluation = viewer.evaluation.controller
    await until(lambda: evaluation.report is not None and evaluation.confusion is not None)
    viewer.evaluation.panel.sort_check.setChecked(True)  # the worst image first
    viewer.browser.first()
    viewer.evaluation.panel.tabs.setCurrentIndex(2)  # the confusion matrix
    await until(lambda: len(window.view.mark_items()) == 4)  # the group picture's marks
    await asyncio.sleep(1.0)
    grab(out / "screenshot-evaluation.png")

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


async def shoot_pipeline(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    """face_mesh on the portraits: the mesh drawn, Where the time goes with its two stages."""
    viewer = Viewer(ViewerOptions(model="face_mesh"), executor)
    window = viewer.window
    viewer.start()  # shows the window, fitted to the screen with its frame
    await until(lambda: viewer.connection.state == "connected")
    # Warm the models up first (their first runs are slow), then wait out the client's 10 s
    # window (statistics reads pass meanwhile) so that the figures shown are the batch's own.
    session = viewer.connection.session
    assert session is not None
    for _ in range(6):
        await asyncio.get_running_loop().run_in_executor(executor, session.infer, data.astronaut())
    await asyncio.sleep(10.5)
    warm_up = viewer.server_split.split
    portraits = sample_folder(work / "pipeline") / "portraits"
    viewer.open_paths([str(portraits)])
    await until(lambda: not viewer.runner.active() and viewer.runner.latest_counts() is not None)
    astronaut = next(k for k in list(window.strip.keys()) if k.endswith("astronaut.jpg"))
    viewer.browser.select(astronaut)
    window.time_dock.raise_()
    # The batch's own figures come with the first statistics read after it (every 2 s); the
    # client's part of the bar covers the last 10 s: shoot in between.
    await until(lambda: viewer.server_split.split is not warm_up, timeout=30)
    await asyncio.sleep(0.5)
    await framed(window)
    grab(out / "screenshot-pipeline.png")
    viewer.request_close()
    await viewer.closed.wait()


async def shoot_tune(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    """The Tune window at 1280x720 once a tune of fixed_cost has run: 6 trials x 3 levels."""
    server = EmbeddedServer(repository_with(work / "tune-repository", "fixed_cost"))
    await asyncio.get_running_loop().run_in_executor(executor, server.start)
    try:
        metrics = f"127.0.0.1:{server.metrics_port}"
        viewer = Viewer(
            ViewerOptions(urls=[server.grpc_url], model="fixed_cost", metrics_url=metrics), executor
        )
        viewer.start()
        await until(lambda: viewer.connection.state == "connected")
        viewer.server_tools.open_tune()
        window = viewer.server_tools.tune
        assert window is not None
        await until(lambda: window.ready)
        window.form.instances.setText("1,2")
        window.form.delays.setText("off,0,2000")
        window.form.levels.setText("1,4,16")
        window.form.requests.setValue(100)
        window.start_button.click()
        await until(lambda: window.tune_result is not None or bool(window.last_error), timeout=900)
        await asyncio.sleep(0.5)
        QApplication.processEvents()
        await framed(window)
        grab(out / "screenshot-tune.png")
        viewer.request_close()
        await viewer.closed.wait()
    finally:
        await asyncio.get_running_loop().run_in_executor(executor, server.stop)


async def shoot_xray(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    """Analyse > Trace requests > All on fixed_40ms (one instance, 40 ms a request): a batch of
    six photographs, the slowest request selected in the Request log, its X-ray under the
    picture (it queued on the server behind the others)."""
    server = EmbeddedServer(repository_with(work / "xray-repository", "fixed_40ms"))
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(executor, server.start)
    try:
        viewer = Viewer(ViewerOptions(urls=[server.grpc_url], model="fixed_40ms"), executor)
        window = viewer.window
        viewer.start()
        await until(lambda: viewer.connection.state == "connected")
        x = viewer.xray
        x.mode_actions["all"].trigger()
        await until(lambda: x.xray.tracing_all)
        viewer.open_paths([str(sample_folder(work / "xray"))])
        await until(lambda: not viewer.runner.active() and len(x.xray.kept()) >= 6, timeout=60)
        viewer.router.flush_log()
        slowest = x.xray.slowest(1)[0]
        window.show_dock(window.log_dock)
        log = window.request_log
        row = next(r for r in range(log.visible_row_count()) if log.request_id_at(r) == slowest.request_id)
        log.table.selectRow(row)
        await asyncio.sleep(0.3)
        # The server's part in sight: the waterfall scrolled down to its compute.
        waterfall = x.view.waterfall
        infer = next(i for i, r in enumerate(waterfall.rows) if r.name == "compute infer")
        x.view.waterfall_scroll.ensureVisible(0, int(waterfall.bar_rect(infer).bottom()) + 4, 0, 0)
        await asyncio.sleep(0.3)
        await framed(window)
        grab(out / "screenshot-xray.png")
        viewer.request_close()
        await viewer.closed.wait()
    finally:
        await loop.run_in_executor(executor, server.stop)


async def shoot_wall(out: Path, executor: ThreadPoolExecutor, work: Path) -> None:
    """A wall of four looped videos with counting lines, zones and a heat map, the Events panel;
    then one of them focused in the single view."""
    xs = back_and_forth((150, 490, 150), speed=5, hold=10)
    videos = []
    for name in ("entrance", "hall", "desk", "corridor"):
        video = work / f"{name}.avi"
        make_crossing_video(video, xs, fps=30, size=(640, 480))
        videos.append(video)
    viewer = Viewer(ViewerOptions(), executor)
    window = viewer.window
    viewer.start()
    await until(lambda: viewer.connection.state == "connected")
    await framed(window)
    viewer.analysis.set_tracking(True)
    viewer.live_ui.toolbar.loop.setChecked(True)
    streams = [viewer.wall_ui.add_source(str(v)) for v in videos]
    door = LineSpec("door", (320.0, 40.0), (320.0, 440.0))
    queue = ZoneSpec("queue", ((380.0, 60.0), (620.0, 60.0), (620.0, 420.0), (380.0, 420.0)))
    till = ZoneSpec("till", ((20.0, 80.0), (250.0, 80.0), (250.0, 400.0), (20.0, 400.0)))
    configs = [
        ZonesConfig((door,), ()),
        ZonesConfig((), (queue,)),
        ZonesConfig((door,), (till,)),
        ZonesConfig((), ()),
    ]
    for stream, config in zip(streams, configs, strict=True):
        assert stream is not None and stream.zones is not None
        await until(lambda s=stream: s.controller.meter.shown >= 1)
        if not config.empty:
            stream.zones.set_config(config)
    corridor = streams[3]
    assert corridor is not None and corridor.zones is not None
    corridor.zones.show_heat(True)
    await until(lambda: len(viewer.zones.panel.model.rows) >= 6, timeout=180)
    viewer.zones.dock.show()
    viewer.zones.dock.raise_()
    window.statusBar().clearMessage()
    await asyncio.sleep(2.0)
    grab(out / "screenshot-wall.png")
    first = streams[2]
    assert first is not None
    viewer.wall.focus(first)
    window.stats_dock.raise_()
    await asyncio.sleep(2.5)
    grab(out / "screenshot-wall-focused.png")
    viewer.request_close()
    await viewer.closed.wait()


SHOTS = {
    "window": shoot,
    "compare": shoot_compare,
    "tune": shoot_tune,
    "pipeline": shoot_pipeline,
    "xray": shoot_xray,
    "wall": shoot_wall,
}


def main(out_dir: str, shots: list[str]) -> None:
    if os.environ.get(IN_DISPLAY) != "1":
        # A screen of the README's size with a window manager, then this again inside it.
        with x_display(*SIZE) as env:
            env[IN_DISPLAY] = "1"
            subprocess.run(
                [sys.executable, "-m", "tests.ui.readme_screenshots", out_dir, *shots], env=env, check=True
            )
        return
    out = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(Path(tmp) / "settings")
        app = QApplication.instance() or QApplication(sys.argv)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        executor = ThreadPoolExecutor(IO_WORKERS)
        try:
            for shot in shots:
                loop.run_until_complete(SHOTS[shot](out, executor, Path(tmp)))
        finally:
            executor.shutdown(wait=True)
            loop.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/images", sys.argv[2:] or list(SHOTS))
