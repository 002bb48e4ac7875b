"""Every window of the viewer on a real X display with a window manager: where its frame (title
bar and borders included) lies, whether it closes with the platform's keys, and how much
of the main window's height the picture gets. Run by tests/ui/test_window_frames.py:

    python -m tests.ui.window_frames GRPC_URL OUT.json    (DISPLAY set, openbox running)

Writes one JSON object per window: {"name", "frame": [x, y, w, h], "client": [...],
"margins": [left, top, right, bottom], "area": [...] (the screen's free area), "closed_by":
the key that closed it or null, and for the main window the picture's height}.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import qasync
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QWidget
from skimage import data

from app.ui.main_window import Mode
from app.ui.qt_app import IO_WORKERS
from app.ui.server.server_dialog import ask_for_server
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video

SETTLE_S = 0.4  # after the frame is known: the refit (a 0 ms timer) and the WM's answer to it


def rect(r: QRect) -> list[int]:
    return [r.x(), r.y(), r.width(), r.height()]


async def until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)


async def framed(window: QWidget) -> None:
    """Shown and framed by the window manager (its title bar is known), then settled."""

    def has_frame() -> bool:
        handle = window.windowHandle()
        return window.isVisible() and handle is not None and handle.frameMargins().top() > 0

    await until(has_frame, f"{type(window).__name__} framed")
    await asyncio.sleep(SETTLE_S)


def describe(name: str, window: QWidget, **extra: Any) -> dict[str, Any]:
    handle = window.windowHandle()
    m = handle.frameMargins()
    screen = window.screen()
    return {
        "name": name,
        "frame": rect(handle.frameGeometry()),  # the platform window's: QWidget's copy can lag
        "client": rect(handle.geometry()),
        "margins": [m.left(), m.top(), m.right(), m.bottom()],
        "area": rect(screen.availableGeometry()),
        **extra,
    }


KEYS = {
    "Esc": (Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier),
    "Ctrl+W": (Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier),
}


async def close_by(window: QWidget, key: str) -> str | None:
    """Press `key` in the window; the key's name when that closed it, else None (and closed)."""
    window.activateWindow()
    QTest.keyClick(window, *KEYS[key])
    try:
        await until(lambda: not window.isVisible(), f"{key} closes it", timeout=3.0)
        return key
    except TimeoutError:
        window.close()
        return None


async def modal(open_it: Callable[[], None], name: str, out: list[dict[str, Any]]) -> None:
    """A dialog run by a static Qt function (its own nested loop): opened from a plain timer
    (never inside a task), measured, then closed with Esc."""
    QTimer.singleShot(0, open_it)
    await until(lambda: QApplication.activeModalWidget() is not None, name)
    dialog = QApplication.activeModalWidget()
    assert dialog is not None
    await framed(dialog)
    entry = describe(name, dialog)
    entry["closed_by"] = await close_by(dialog, "Esc")
    out.append(entry)


async def windowed(name: str, window: QWidget, key: str, out: list[dict[str, Any]]) -> None:
    await framed(window)
    entry = describe(name, window)
    entry["closed_by"] = await close_by(window, key)
    out.append(entry)


def optional_docks(viewer: Viewer) -> list[QDockWidget]:
    """Every dock the main window can show: its own, Tracks, Server (metrics), Evaluation, Events."""
    return [
        *viewer.window.docks(),
        viewer.analysis.tracks_dock,
        viewer.server_tools.metrics_dock,
        viewer.evaluation.dock,
        viewer.zones.dock,
    ]


def stack_docks(window: QMainWindow, docks: list[QDockWidget]) -> None:
    """Every dock in a column of its own rows (no tabs): the tallest arrangement a user can make."""
    for dock in docks:
        dock.setFloating(False)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock, Qt.Orientation.Vertical)


async def dock_combinations(viewer: Viewer, layout: str, out: list[dict[str, Any]]) -> None:
    """The main window's smallest size (frame included) with every combination of docks shown."""
    w = viewer.window
    docks = optional_docks(viewer)
    for shown in itertools.product((False, True), repeat=len(docks)):
        for dock, on in zip(docks, shown, strict=True):
            dock.setVisible(on)
        await asyncio.sleep(0.01)  # (not processEvents(): a dock's visibility starts tasks)
        titles = [d.windowTitle() for d, on in zip(docks, shown, strict=True) if on]
        entry = describe(f"docks ({layout}): {', '.join(titles) or 'none'}", w)
        minimum = w.minimumSizeHint()
        entry["minimum"] = [minimum.width(), minimum.height()]
        out.append(entry)
    for dock in docks:
        dock.show()
    await asyncio.sleep(SETTLE_S)
    out.append(main_window_entry(viewer, f"main window (every dock, {layout})"))


def main_window_entry(viewer: Viewer, name: str) -> dict[str, Any]:
    w = viewer.window
    return describe(
        name,
        w,
        mode=str(w.mode),
        picture=rect(QRect(w.view.mapTo(w, w.view.rect().topLeft()), w.view.size())),
        status_bar=rect(QRect(w.statusBar().mapTo(w, w.statusBar().rect().topLeft()), w.statusBar().size())),
    )


async def walk(url: str, work: Path, out: list[dict[str, Any]], executor: ThreadPoolExecutor) -> None:
    viewer = Viewer(ViewerOptions(urls=[url], model="face_detector"), executor)
    w = viewer.window
    viewer.start()
    await until(lambda: viewer.connection.state == "connected", "connected")
    await framed(w)
    out.append(main_window_entry(viewer, "main window (first screen)"))

    folder = work / "photos"
    folder.mkdir()
    for i in range(8):
        cv2.imwrite(str(folder / f"photo_{i}.jpg"), cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR))
    viewer.open_paths([str(folder)])
    await until(lambda: not viewer.runner.active() and viewer.gallery.current_image is not None, "batch")
    await asyncio.sleep(SETTLE_S)
    out.append(main_window_entry(viewer, "main window (batch)"))

    # Every combination of docks, tabbed as by default and stacked in rows.
    await dock_combinations(viewer, "tabbed", out)
    stack_docks(w, optional_docks(viewer))
    await dock_combinations(viewer, "stacked", out)
    w.reset_layout()
    viewer.analysis.restore_docks()
    viewer.server_tools.metrics_dock.hide()
    viewer.evaluation.dock.hide()
    await asyncio.sleep(SETTLE_S)

    # Dialogs and windows of their own.
    viewer.help.show_shortcuts()
    assert viewer.help.dialog is not None
    await windowed("keyboard shortcuts", viewer.help.dialog, "Ctrl+W", out)
    viewer.tasks.spawn(viewer.help.show_about())
    await until(lambda: (d := viewer.help.dialog) is not None and d.objectName() == "AboutDialog", "about")
    assert viewer.help.dialog is not None
    await windowed("about", viewer.help.dialog, "Esc", out)
    viewer.window.load_test_action.trigger()
    assert viewer.analysis.load_test is not None
    await windowed("load test", viewer.analysis.load_test, "Ctrl+W", out)
    viewer.analysis.ask_compare()
    choose = viewer.analysis.dialog
    assert choose is not None
    await framed(choose)
    out.append(describe("compare with…", choose, closed_by=None))
    choose.model_b.setCurrentText("face_detector")
    choose.version_b.setText("1")  # (B may not be A)
    choose.accept()
    compare = viewer.analysis.compare.window
    await until(compare.isVisible, "the compare window")
    viewer.analysis.compare.open_paths([str(folder)])  # its panel and titles filled in
    await until(lambda: viewer.analysis.compare.tally.summary()["total"] == 8, "the compare batch")
    await windowed("A/B compare", compare, "Ctrl+W", out)
    viewer.analysis.ask_compare()
    again = viewer.analysis.dialog
    assert again is not None
    await windowed("compare with… (Esc)", again, "Esc", out)
    viewer.analysis.compare.window.show()  # (closed above) and Esc closes it too
    await windowed("A/B compare (Esc)", viewer.analysis.compare.window, "Esc", out)
    viewer.server_tools.open_tune()
    assert viewer.server_tools.tune is not None
    await windowed("tune", viewer.server_tools.tune, "Esc", out)
    viewer.server_tools.open_repository()
    assert viewer.server_tools.repository is not None
    await windowed("repository", viewer.server_tools.repository, "Ctrl+W", out)
    viewer.evaluation.ask()
    assert viewer.evaluation.dialog is not None
    await windowed("evaluate against labels", viewer.evaluation.dialog, "Esc", out)
    viewer.live_ui.open_camera()
    assert viewer.live_ui.picker is not None
    await windowed("open a camera", viewer.live_ui.picker, "Esc", out)
    server = ask_for_server(w, "(a test of its size)", "localhost:8001", lambda _urls: None)
    await windowed("connect to a server", server, "Esc", out)
    await modal(w.open_files, "open images (file dialog)", out)

    # Live: the picture without the batch's widgets, the Record dialog.
    video = work / "walk.mp4"
    make_face_video(video, frames=900, fps=30, size=(640, 480))
    viewer.live_ui.open_source(str(video))
    await until(lambda: w.mode is Mode.LIVE and viewer.live.meter.shown >= 5, "live frames")
    await asyncio.sleep(SETTLE_S)
    out.append(main_window_entry(viewer, "main window (live)"))
    await modal(viewer.live_ui.toolbar.record_action.trigger, "record (file dialog)", out)

    # The main window restored on a later start: still inside the screen.
    viewer.request_close()
    await viewer.closed.wait()
    again_viewer = Viewer(ViewerOptions(urls=[url], model="face_detector"), executor)
    again_viewer.start()
    await framed(again_viewer.window)
    out.append(main_window_entry(again_viewer, "main window (restored)"))
    again_viewer.request_close()
    await again_viewer.closed.wait()


def main(url: str, out_path: str) -> None:
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(Path(tmp) / "settings")
        app = QApplication.instance() or QApplication(sys.argv[:1])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        executor = ThreadPoolExecutor(IO_WORKERS)
        try:
            loop.run_until_complete(walk(url, Path(tmp), out, executor))
        finally:
            executor.shutdown(wait=True)
            loop.close()
            Path(out_path).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
