"""Inputs opened before a model is open say what they wait for; the model list after an
unknown --model shows the states the server gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from skimage import data

from app.pipeline.connection.state import ConnectionState
from app.server.embedded import EmbeddedServer
from app.ui.main_window import Mode
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def combo_texts(viewer) -> dict[str, str]:  # type: ignore[no-untyped-def]
    combo = viewer.window.server_panel.model_combo
    return {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}


def test_an_unknown_model_lists_the_ready_ones_as_ready_and_the_folder_says_it_waits(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "photos", 3, data.astronaut()[::4, ::4].copy())
    viewer = harness.viewer(triton.grpc_url, "no_such_model", open_paths=[str(folder)])
    harness.run(until(lambda: viewer.connection.state is ConnectionState.FAILED, what="the failed connect"))
    harness.run(until(lambda: "face_detector" in combo_texts(viewer), what="the model list"))
    texts = combo_texts(viewer)
    assert texts["face_detector"] == "face_detector", texts  # ready: no "(not loaded)"
    assert texts["slow_faces"] == "slow_faces"
    assert texts["broken_at_load"] != "broken_at_load", "a model that failed to load says so"
    w = viewer.window
    QApplication.processEvents()
    assert w.mode is Mode.BATCH
    progress = w.batch_panel.progress_text()
    assert "0 / 0" not in progress and "img/s" not in progress, progress
    assert "photos" in progress and "model" in progress, progress
    assert w.view_note.isVisible() and "model" in w.view_note.text(), w.view_note.text()

    w.server_panel.model_chosen.emit("face_detector")  # the user picks a ready one
    shown = until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="the folder")
    harness.run(shown)
    assert len(viewer.gallery.results) == 3
    assert not w.view_note.isVisible()
    assert "/ 3" in w.batch_panel.progress_text()


def test_the_sample_pressed_while_the_server_starts_says_so(harness: Harness) -> None:
    viewer = harness.viewer(None)  # the embedded server: it takes a while to start
    w = viewer.window
    assert viewer.connection.state is not ConnectionState.CONNECTED
    QTest.mouseClick(w.empty_state.sample_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    assert w.mode is Mode.BATCH
    assert w.view_note.isVisible(), "not a dark empty picture"
    assert "server" in w.view_note.text() and "sample" in w.view_note.text(), w.view_note.text()
    shown = until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, 240, "the sample")
    harness.run(shown, 240)
    assert not w.view_note.isVisible()
    (result,) = viewer.gallery.results.values()
    assert result.ok
