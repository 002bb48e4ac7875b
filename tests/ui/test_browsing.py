"""Browsing a batch like a labelling tool, in the real window: keys wherever the focus is,
the info line, names relative to the opened folder, count marks, search, class filter, and
the boxes list that highlights a box."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from skimage import data

from app.server.embedded import EmbeddedServer
from app.ui.batch.batch_bar import WITHOUT_DETECTIONS
from app.ui.viewer import Viewer
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    """a.png (a face), sub/b.png (a face), sub/deeper/c.png (coffee, no face), d.png (coffee)."""
    root = tmp_path / "photos"
    astronaut, coffee = data.astronaut(), data.coffee()[::2, ::2].copy()
    write_png(_mk(root / "a.png"), astronaut)
    write_png(_mk(root / "sub" / "b.png"), cv2.resize(astronaut, (256, 256)))
    write_png(_mk(root / "sub" / "deeper" / "c.png"), coffee)
    write_png(_mk(root / "d.png"), coffee)
    return root


def _mk(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def opened(harness: Harness, url: str, folder: Path) -> Viewer:
    viewer = harness.viewer(url, "face_detector", open_paths=[str(folder)])
    viewer.window.resize(1280, 720)
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="batch"))
    harness.run(until(lambda: viewer.window.first_action.isEnabled(), what="navigation enabled"))
    return viewer


def shown(viewer: Viewer) -> str:
    key = viewer.gallery.current_key
    assert key is not None
    return viewer.browser.name_of(key)


def test_keys_move_through_the_batch_wherever_the_focus_is(
    harness: Harness, triton: EmbeddedServer, photos: Path
) -> None:
    viewer = opened(harness, triton.grpc_url, photos)
    w = viewer.window
    order = [viewer.browser.name_of(k) for k in list(w.strip.keys())]
    assert sorted(order) == ["a.png", "d.png", "sub/b.png", "sub/deeper/c.png"], "sub-folders are kept"
    # Focus on widgets that are not the strip: the request log, a slider, the view.
    w.request_log.table.setFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Home)
    harness.run(until(lambda: shown(viewer) == order[0], what="first"))
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Right)
    harness.run(until(lambda: shown(viewer) == order[1], what="second"))
    w.thresholds.score_slider().setFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_D)
    harness.run(until(lambda: shown(viewer) == order[2], what="third (D)"))
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_A)
    harness.run(until(lambda: shown(viewer) == order[1], what="back (A)"))
    w.view.setFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_End)
    harness.run(until(lambda: shown(viewer) == order[-1], what="last (End)"))
    assert not w.next_action.isEnabled() or not viewer.browser.can_step(1)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Left)
    harness.run(until(lambda: shown(viewer) == order[-2], what="previous (Left)"))
    # Typing in a text field types: the letters are not taken as shortcuts there.
    w.batch_bar.search.setFocus()
    QTest.keyClicks(w.batch_bar.search, "da")
    assert w.batch_bar.search.text() == "da"
    w.batch_bar.search.clear()
    # The buttons do the same (the search moved to an image it kept: go on from there).
    viewer.browser.last()
    harness.run(until(lambda: shown(viewer) == order[-1], what="last"))
    w.batch_bar.prev_button.click()
    harness.run(until(lambda: shown(viewer) == order[-2], what="previous (button)"))


def test_info_line_and_marks_name_the_file_and_its_detections(
    harness: Harness, triton: EmbeddedServer, photos: Path
) -> None:
    viewer = opened(harness, triton.grpc_url, photos)
    w = viewer.window
    keys = w.strip.keys()
    b = next(k for k in keys if k.endswith("b.png"))
    c = next(k for k in keys if k.endswith("c.png"))
    viewer.browser.select(b)
    harness.run(until(lambda: viewer.gallery.current_image is not None and viewer.gallery.current_key == b))
    position = keys.index(b) + 1
    info = w.batch_bar.info.text()
    latency = viewer.gallery.results[b].latency_ms
    assert latency is not None
    assert info == f"{position} / 4 · sub/b.png · 1 detection · {latency:.1f} ms"
    viewer.browser.select(c)
    harness.run(until(lambda: "sub/deeper/c.png · no detections" in w.batch_bar.info.text(), what="info"))
    assert w.strip.detection_count(b) == 1 and w.strip.detection_count(c) == 0
    assert w.strip.item_for(c).text() == "sub/deeper/c.png"  # type: ignore[union-attr]
    # The marks follow the sliders: above the face's score, no image has a detection.
    w.thresholds.score_slider().setValue(99)
    harness.run(until(lambda: w.strip.detection_count(b) == 0, what="recount"))
    w.thresholds.score_slider().setValue(50)
    harness.run(until(lambda: w.strip.detection_count(b) == 1, what="recount back"))


def test_search_and_class_filter_limit_what_navigation_visits(
    harness: Harness, triton: EmbeddedServer, photos: Path
) -> None:
    viewer = opened(harness, triton.grpc_url, photos)
    w = viewer.window
    names = lambda: [viewer.browser.name_of(k) for k in w.strip.visible_keys()]  # noqa: E731
    w.batch_bar.search.setText("sub/")
    assert sorted(names()) == ["sub/b.png", "sub/deeper/c.png"]
    assert shown(viewer) in names(), "the shown image is one the filter keeps"
    w.batch_bar.search.clear()
    w.batch_bar.filter.setCurrentIndex(w.batch_bar.filter.findData(WITHOUT_DETECTIONS))
    assert sorted(names()) == ["d.png", "sub/deeper/c.png"]
    viewer.browser.first()
    first = shown(viewer)
    QTest.keyClick(w.view, Qt.Key.Key_Right)
    harness.run(until(lambda: shown(viewer) != first, what="next without detections"))
    assert shown(viewer) in ("d.png", "sub/deeper/c.png")
    assert " / 2 · " in w.batch_bar.info.text()
    face = w.batch_bar.filter.findData("class:face")
    assert face >= 0, "each class seen is offered"
    w.batch_bar.filter.setCurrentIndex(face)
    assert sorted(names()) == ["a.png", "sub/b.png"]


def test_selecting_a_box_in_the_list_highlights_it(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    # Two faces side by side (the face detector wants faces that fill the picture): two rows.
    face = data.astronaut()[30:250, 120:340]
    pair = cv2.hconcat([face, face])
    path = write_png(tmp_path / "two.png", pair)
    viewer = opened(harness, triton.grpc_url, path.parent)
    panel = viewer.window.detections_panel
    harness.run(until(lambda: panel.table.rowCount() == 2, what="two rows"))
    items = viewer.window.view.box_items()
    assert [panel.table.item(r, 1).text() for r in range(2)] == ["face", "face"]  # type: ignore[union-attr]
    x1 = items[1].detection.box[0]
    assert panel.table.item(1, 3).text().startswith(f"{x1:.0f}, ")  # type: ignore[union-attr]
    panel.table.selectRow(1)
    assert panel.highlighted() == 1
    assert items[1].pen().widthF() == 4.0 and items[1].opacity() == 1.0
    assert items[0].pen().widthF() == 2.0 and items[0].opacity() < 0.5
    panel.table.clearSelection()
    assert all(i.opacity() == 1.0 for i in items)
