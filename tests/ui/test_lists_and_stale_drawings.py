"""The image list and what is drawn, in the real window (real server):

- opening a folder starts a new list ("Add to the list": the File menu, or Shift on drop); names
  stay relative to the folder each image was opened through, in the strip and in the exports;
  a batch's view opens on 1 / N, not on the first image to finish;
- everything drawn belongs to what is shown: a live stream's trails go with the stream (a new
  list, File > Clear the image list), the old model's boxes go with the model (stills and a
  stream's last frame)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import norfair  # noqa: F401  (imported on the GUI thread at the first tracked frame otherwise)
import pytest
from pycocotools.coco import COCO
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from skimage import data

from app.pipeline.exports.formats import ExportFormat
from app.server.embedded import EmbeddedServer
from app.ui.state.viewer_state import Mode
from app.ui.viewer import Viewer
from tests.media import make_face_video
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, image_folder, slow_image, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def drop(viewer: Viewer, paths: list[Path], modifiers: Qt.KeyboardModifier) -> None:
    """A real drag enter + drop of file URLs, with keyboard modifiers held."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    action, button = Qt.DropAction.CopyAction, Qt.MouseButton.LeftButton
    enter = QDragEnterEvent(QPoint(50, 50), action, mime, button, modifiers)
    QApplication.sendEvent(viewer.window, enter)
    assert enter.isAccepted()
    expected = "to add 1 item to the list" if modifiers & Qt.KeyboardModifier.ShiftModifier else "to open"
    assert expected in viewer.window.drop_highlight.text()
    event = QDropEvent(QPointF(50, 50), action, mime, button, modifiers)
    QApplication.sendEvent(viewer.window, event)
    assert event.isAccepted()


def names(viewer: Viewer) -> list[str]:
    keys = viewer.window.strip.keys()
    return [viewer.browser.name_of(k) for k in keys]


def coco_names(viewer: Viewer, harness: Harness, out: Path) -> set[str]:
    viewer.exporter.export_all(ExportFormat.COCO, str(out))
    harness.run(until(lambda: not viewer.exporter.running, what="the export"))
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(out))
    return {i["file_name"] for i in coco.loadImgs(coco.getImgIds())}


def test_a_folder_starts_a_new_list_unless_added_and_names_keep_their_own_root(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    # The first image is the slowest: the others finish first, the view still opens on 1 / 3.
    folder = tmp_path / "shoot"
    image_folder(folder, 3, slow_image(0))
    write_png(folder / "img_0000.png", slow_image(600))
    (folder / "sub").mkdir()
    write_png(folder / "sub" / "deep.png", slow_image(0))
    (tmp_path / "elsewhere").mkdir()
    sample = write_png(tmp_path / "elsewhere" / "small.png", slow_image(0))
    viewer = harness.viewer(triton.grpc_url, "slow_faces", open_paths=[str(sample)])
    harness.run(until(lambda: job_done(viewer) and viewer.state.shown_key is not None, what="the sample"))
    assert names(viewer) == ["small.png"]

    viewer.window.paths_opened.emit([str(folder)])  # File > Open folder…: a new list
    first = str(folder / "img_0000.png")
    harness.run(until(lambda: job_done(viewer) and len(viewer.gallery.results) == 4, what="the folder"))
    harness.run(until(lambda: viewer.state.shown_key == first, what="the first image shown"))
    assert names(viewer) == ["img_0000.png", "img_0001.png", "img_0002.png", "sub/deep.png"]
    assert viewer.browser.info().startswith("1 / 4 · img_0000.png · 1 detection")
    assert str(sample) not in viewer.gallery.results

    # Shift on drop adds to the list; the file keeps its own name, the folder's keep theirs.
    drop(viewer, [sample], Qt.KeyboardModifier.ShiftModifier)
    harness.run(until(lambda: job_done(viewer) and str(sample) in viewer.gallery.results, what="added"))
    assert names(viewer) == ["img_0000.png", "img_0001.png", "img_0002.png", "sub/deep.png", "small.png"]
    assert viewer.gallery.current_key == first  # adding does not move the view
    assert coco_names(viewer, harness, tmp_path / "all.json") == {
        "img_0000.png", "img_0001.png", "img_0002.png", "sub/deep.png", "small.png"
    }  # fmt: skip

    # File > Add a folder to the list: the same; a plain drop: a new list again.
    other = image_folder(tmp_path / "other", 2, slow_image(0))
    viewer.window.paths_added.emit([str(other)])
    harness.run(until(lambda: job_done(viewer) and len(viewer.gallery.results) == 7, what="folder added"))
    assert names(viewer)[-2:] == ["img_0000.png", "img_0001.png"] and names(viewer)[3] == "sub/deep.png"
    drop(viewer, [other], Qt.KeyboardModifier.NoModifier)
    harness.run(until(lambda: job_done(viewer) and viewer.state.shown_key is not None, what="a new list"))
    assert set(viewer.gallery.results) == {str(p) for p in other.iterdir()}
    assert viewer.browser.info().startswith("1 / 2 · img_0000.png")


def test_trails_of_an_earlier_stream_never_stay_on_still_images(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "face.avi"
    make_face_video(video, frames=120, fps=30, size=(320, 240))
    stills = image_folder(tmp_path / "stills", 2, data.astronaut()[::2, ::2].copy())
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.live_ui.toolbar.frame_by_frame.setChecked(True)
    viewer.analysis.track_action.trigger()
    trails = viewer.analysis.tracking.trails
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: any(len(p) >= 3 for _, p in trails.trails), what="a trail drawn"))
    viewer.live.stop()
    harness.run(until(lambda: viewer.live.idle and viewer.live.state == "stopped", what="stopped"))
    assert trails.trails, "the stopped stream's last frame keeps its trail"

    viewer.open_paths([str(stills)])  # the stills take the view: the stream's trails go
    harness.run(until(lambda: job_done(viewer) and viewer.state.shown_key is not None, what="stills"))
    assert viewer.state.mode is Mode.BATCH
    assert trails.trails == [] and trails.shapes == [] and trails.boundingRect().isEmpty()
    # And after File > Clear the image list and another folder: still nothing of the stream.
    viewer.window.clear_action.trigger()
    viewer.open_paths([str(stills)])
    harness.run(until(lambda: job_done(viewer) and viewer.state.shown_key is not None, what="stills again"))
    assert trails.trails == [] and trails.boundingRect().isEmpty()
    assert viewer.analysis.tracking.tracker is None


def test_the_old_models_results_are_never_drawn_after_switching_models(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    write_png(folder / "astronaut.png", data.astronaut())
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    view = viewer.window.view
    harness.run(until(lambda: job_done(viewer) and len(view.box_items()) == 1, what="the face drawn"))

    drawn_after_switch: list[int] = []

    def opened(session: object) -> None:  # right after the viewer handled the new session
        drawn_after_switch.append(len(view.box_items()))

    viewer.connection.session_opened.connect(opened)
    viewer.window.server_panel.model_chosen.emit("person_segmentation")
    harness.run(until(lambda: viewer.state.model == "person_segmentation", what="the new model"))
    assert drawn_after_switch == [0], "the face detector's box was still drawn on the picture"
    # The list runs again with the new model: its mask, no box.
    harness.run(until(lambda: job_done(viewer) and view.semantic_items(), what="the new model's mask"))
    assert view.box_items() == []
    assert {r.model for r in viewer.gallery.results.values()} == {"person_segmentation"}
    assert "person" in viewer.browser.info()

    # A stream's last frame: its boxes go with the model too.
    video = tmp_path / "face.avi"
    make_face_video(video, frames=20, fps=30, size=(320, 240))
    viewer.window.server_panel.model_chosen.emit("face_detector")
    harness.run(until(lambda: viewer.state.model == "face_detector", what="the face detector again"))
    viewer.live_ui.toolbar.frame_by_frame.setChecked(True)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.state == "ended" and viewer.live.idle, what="the video played"))
    assert view.box_items(), "the last frame shows its face"
    viewer.window.server_panel.model_chosen.emit("person_segmentation")
    harness.run(until(lambda: viewer.state.model == "person_segmentation", what="the new model"))
    assert view.box_items() == [] and viewer.state.mode is Mode.LIVE
    # The list waits for the batch view (no run, no statistics scope taken from the stream),
    # then runs with the model now in use.
    assert not viewer.runner.active() and viewer.gallery.results == {}
    viewer.browser.first()
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.results, what="the list run again"))
    assert viewer.state.mode is Mode.BATCH
    assert {r.model for r in viewer.gallery.results.values()} == {"person_segmentation"}
