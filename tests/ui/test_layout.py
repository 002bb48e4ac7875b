"""The window on a laptop screen (1280x720, offscreen; tests/ui/test_window_frames.py checks
it with a real window manager's frame): everything inside it and usable,
docks that close, float and come back (remembered), the first screen's call to action,
actions that say why they cannot run, the drag-over highlight, the Help menu."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
from PySide6.QtCore import QMimeData, QPoint, QRect, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragLeaveEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDockWidget, QTableWidget, QWidget
from skimage import data

from app.server.embedded import EmbeddedServer
from app.ui.main_window import Mode
from app.ui.viewer import Viewer
from tests.ui.test_viewer_window import drop, job_done
from tests.ui.viewer_fixtures import Harness, image_folder, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]
LAPTOP = (1280, 720)


def laptop_viewer(harness: Harness, url: str, **kwargs: object) -> Viewer:
    viewer = harness.viewer(url, "face_detector", **kwargs)  # type: ignore[arg-type]
    viewer.window.resize(*LAPTOP)
    harness.connected(viewer)
    QApplication.processEvents()
    return viewer


def inside(window: QWidget, widget: QWidget) -> QRect:
    """The widget's rectangle in window coordinates, asserted to lie within the window."""
    top_left = widget.mapTo(window, QPoint(0, 0))
    rect = QRect(top_left, widget.size())
    assert window.rect().contains(rect), (type(widget).__name__, rect, window.rect())
    return rect


def test_fits_1280x720_with_room_for_each_part(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "batch", 12, data.astronaut()[::4, ::4].copy())
    viewer = laptop_viewer(harness, triton.grpc_url)
    w = viewer.window
    hint = w.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 640, hint
    w.resize(1024, 640)
    QApplication.processEvents()
    assert (w.width(), w.height()) == (1024, 640), "the window shrinks to 1024x640"
    w.resize(*LAPTOP)
    viewer.open_paths([str(folder)])
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="batch"))
    QApplication.processEvents()
    assert (w.width(), w.height()) == LAPTOP
    for dock in w.docks():
        if not dock.isHidden() and dock.visibleRegion().boundingRect().height() > 0:
            inside(w, dock)
    inside(w, w.statusBar())
    view = inside(w, w.view)
    assert view.height() >= w.height() / 2 and view.width() >= 600, view  # the picture gets the room
    inside(w, w.strip)
    assert "ok" in w.stats_line.text() and "req/s" in w.stats_line.text(), w.stats_line.text()
    w.log_dock.raise_()  # a tab of the side column
    QApplication.processEvents()
    log = w.request_log.table
    inside(w, log)
    row_height = log.verticalHeader().defaultSectionSize()
    assert log.viewport().height() >= 5 * row_height, "the request log shows at least 5 rows"
    w.stats_dock.raise_()
    QApplication.processEvents()
    chart = w.live_plot.visibleRegion().boundingRect()
    assert chart.height() >= 100 and chart.width() >= w.live_plot.width() - 1, "the chart is visible whole"


def test_live_video_hides_the_batch_strip_and_the_batch_hides_the_live_toolbar(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    from tests.media import make_index_video

    image = write_png(tmp_path / "a.png", data.astronaut())
    video = tmp_path / "v.avi"
    make_index_video(video, frames=60)
    viewer = laptop_viewer(harness, triton.grpc_url, open_paths=[str(image)])
    w = viewer.window
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="batch"))
    assert w.mode is Mode.BATCH and w.strip.isVisible() and w.batch_bar.isVisible()
    assert not viewer.live_ui.toolbar.isVisible(), "browsing a batch: no live toolbar"
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="live frames"))
    assert w.mode is Mode.LIVE and viewer.live_ui.toolbar.isVisible()
    assert not w.strip.isVisible() and not w.batch_bar.isVisible() and not w.batch_panel.isVisible()
    w.thumbnails_action.trigger()  # View > Batch bar and thumbnails: back on demand
    assert w.strip.isVisible()
    QTest.keyClick(w.view, Qt.Key.Key_Home)  # moving in the batch shows it again; the stream stops
    harness.run(until(lambda: viewer.live.idle and w.mode is Mode.BATCH, what="batch view"))
    harness.run(until(lambda: viewer.gallery.current_image is not None, what="batch image"))
    assert viewer.gallery.current_key == str(image)


def test_docks_close_float_and_come_back_remembered(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = laptop_viewer(harness, triton.grpc_url)
    w = viewer.window
    for dock in w.docks():
        features = dock.features()
        assert features & QDockWidget.DockWidgetFeature.DockWidgetClosable
        assert features & QDockWidget.DockWidgetFeature.DockWidgetFloatable
    w.log_dock.toggleViewAction().trigger()  # View > Request log: closed
    w.server_dock.setFloating(True)
    QApplication.processEvents()
    assert w.log_dock.isHidden() and w.server_dock.isFloating()
    harness.close(viewer)

    again = laptop_viewer(harness, triton.grpc_url)  # the same settings folder
    QApplication.processEvents()
    assert again.window.log_dock.isHidden(), "a closed dock stays closed"
    assert again.window.server_dock.isFloating(), "a floating dock floats again"
    again.window.log_dock.toggleViewAction().trigger()
    assert not again.window.log_dock.isHidden()
    again.window.reset_layout()
    QApplication.processEvents()
    assert not again.window.server_dock.isFloating()
    assert all(not d.isHidden() for d in again.window.docks())


def test_first_screen_offers_the_sample_and_disabled_actions_say_why(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = laptop_viewer(harness, triton.grpc_url)
    w = viewer.window
    assert w.mode is Mode.EMPTY and w.empty_state.isVisible() and not w.view.isVisible()
    assert "Drop images or a folder here" in w.empty_state.title.text()
    assert "Connected" in w.empty_state.server_line.text()
    bar = viewer.live_ui.toolbar
    QApplication.processEvents()
    for action in (bar.start_action, bar.record_action, w.next_action, w.export_png_action):
        assert not action.isEnabled(), action.text()
        assert "first" in action.toolTip(), (action.text(), action.toolTip())
    QTest.mouseClick(w.empty_state.sample_button, Qt.MouseButton.LeftButton)
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="sample"))
    assert w.mode is Mode.BATCH and w.view.isVisible()
    (result,) = viewer.gallery.results.values()
    assert result.ok and [d.label for d in result.detections] == ["face"]
    assert len(w.view.box_items()) == 1
    harness.run(until(lambda: w.export_png_action.isEnabled(), what="export enabled"))


def test_dragging_files_over_the_window_highlights_it(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    image = write_png(tmp_path / "a.png", data.astronaut())
    viewer = laptop_viewer(harness, triton.grpc_url)
    w = viewer.window
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(image))])
    enter = QDragEnterEvent(
        QPoint(300, 300),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(w, enter)
    assert enter.isAccepted() and w.drop_highlight.isVisible()
    assert "Drop to open 1 item" in w.drop_highlight.text()
    assert w.drop_highlight.geometry().width() > w.width() - 20
    QApplication.sendEvent(w, QDragLeaveEvent())
    assert not w.drop_highlight.isVisible()
    drop(viewer, [image])  # enter + drop: opened, highlight gone
    assert not w.drop_highlight.isVisible()
    harness.run(until(lambda: job_done(viewer), what="the dropped image"))
    assert str(image) in viewer.gallery.results


def test_help_lists_the_shortcuts_and_about_names_the_versions(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = laptop_viewer(harness, triton.grpc_url)
    QTest.keyClick(viewer.window, Qt.Key.Key_F1)
    dialog = viewer.help.dialog
    assert dialog is not None and dialog.isVisible()
    table = dialog.findChild(QTableWidget)
    assert table is not None
    rows = {
        table.item(r, 1).text(): table.item(r, 2).text()  # type: ignore[union-attr]
        for r in range(table.rowCount())
    }
    assert rows["Next image"] == "Right, D" and rows["Previous image"] == "Left, A"
    assert rows["▶ Start"] == "F5" and rows["❚❚ Pause"] == "Space" and rows["■ Stop"] == "Shift+F5"
    assert rows["● Record"] == "Ctrl+R" and "F" in rows["Fit to window"]
    dialog.close()
    viewer.help.about_action.trigger()
    harness.run(until(lambda: viewer.help.dialog not in (None, dialog), what="about"))
    about = viewer.help.dialog
    assert about is not None
    text = " ".join(
        label.text()
        for label in about.findChildren(QWidget)
        if hasattr(label, "text") and isinstance(label.text(), str)
    )  # type: ignore[attr-defined]
    for name in ("Qt", "PySide6", "tritonclient", "Server"):
        assert name in text
    assert "triton 2." in text and triton.grpc_url in text
    about.close()


def test_high_dpi_screens_get_a_sharp_window_of_the_same_layout(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    """At 200% scaling the window keeps its layout (in logical pixels) and is drawn with twice
    the pixels: its screenshot is twice as large and, scaled back down, the same picture."""
    import os
    import subprocess
    import sys

    import numpy as np

    from app.resources import sample_image

    shots = {}
    for scale in ("1", "2"):
        out = tmp_path / f"x{scale}.png"
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_SCALE_FACTOR=scale)
        env["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp_path / f"settings{scale}")
        args = ["--url", triton.grpc_url, "--open", str(sample_image()), "--screenshot", str(out)]
        done = subprocess.run(
            [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        shots[scale] = cv2.imread(str(out), cv2.IMREAD_GRAYSCALE)
    one, two = shots["1"], shots["2"]
    assert two.shape == (2 * one.shape[0], 2 * one.shape[1])
    down = cv2.resize(two, (one.shape[1], one.shape[0]), interpolation=cv2.INTER_AREA)
    # Same layout: text renders a little differently, nothing moved.
    difference = np.abs(down.astype(int) - one.astype(int))
    assert difference.mean() < 8, difference.mean()  # 57 when the docks were squeezed at 2x
