"""File > Export in the real window: each format re-read by an independent parser and
compared with what the window shows; folder exports ask before replacing files; save
dialogs start in the last folder used with a suggested name."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import cv2
import pytest
from globox import AnnotationSet
from pycocotools.coco import COCO
from PySide6.QtWidgets import QDialog, QFileDialog, QLineEdit
from pytestqt.qtbot import QtBot
from skimage import data

from app.pipeline.exports.formats import ExportFormat
from app.server.embedded import EmbeddedServer
from app.sources.images import read_image
from app.ui.viewer import Viewer
from app.ui.widgets.folder_dialog import NewFolderDialog
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture
def batch_viewer(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> Viewer:
    root = tmp_path / "photos"
    (root / "sub").mkdir(parents=True)
    write_png(root / "face.png", data.astronaut())
    write_png(root / "sub" / "two.png", cv2.hconcat([data.astronaut()[30:250, 120:340]] * 2))
    write_png(root / "sub" / "coffee.png", data.coffee()[::2, ::2].copy())
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(root)])
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="batch"))
    return viewer


def same_boxes(got: list[tuple[float, ...]], want: list[tuple[float, ...]], tol: float = 0.11) -> bool:
    return len(got) == len(want) and all(
        all(abs(a - b) <= tol for a, b in zip(g, w, strict=True)) for g, w in zip(got, want, strict=True)
    )


def wait_written(harness: Harness, viewer: Viewer) -> None:
    harness.run(until(lambda: not viewer.exporter.running, what="the export"))


def expected(viewer: Viewer) -> dict[str, list[tuple[float, float, float, float]]]:
    """name -> the boxes the window shows (under the sliders), rounded."""
    out = {}
    for key, result in viewer.gallery.results.items():
        dets = viewer.gallery.visible_detections(result)
        out[viewer.browser.name_of(key)] = sorted(tuple(round(v, 1) for v in d.box) for d in dets)
    return out  # type: ignore[return-value]


def test_coco_holds_every_image_with_its_boxes(
    harness: Harness, batch_viewer: Viewer, tmp_path: Path
) -> None:
    want = expected(batch_viewer)
    assert [len(v) for k, v in sorted(want.items())] == [1, 0, 2]  # face, sub/coffee, sub/two
    out = tmp_path / "coco.json"
    batch_viewer.exporter.export_all(ExportFormat.COCO, str(out))
    wait_written(harness, batch_viewer)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(out))
    for image in coco.loadImgs(coco.getImgIds()):
        anns = coco.loadAnns(coco.getAnnIds(imgIds=[image["id"]]))
        boxes = sorted(
            tuple(round(v, 1) for v in (x, y, x + w, y + h)) for x, y, w, h in (a["bbox"] for a in anns)
        )
        assert same_boxes(boxes, want[image["file_name"]]), (image["file_name"], boxes)
    assert {i["file_name"] for i in coco.loadImgs(coco.getImgIds())} == set(want)
    # The sliders filter the export as they filter the view.
    batch_viewer.window.thresholds.score_slider().setValue(99)
    batch_viewer.exporter.export_all(ExportFormat.COCO, str(out))
    wait_written(harness, batch_viewer)
    assert json.loads(out.read_text())["annotations"] == []


def test_folder_exports_ask_before_replacing_and_are_read_back(
    harness: Harness, batch_viewer: Viewer, tmp_path: Path
) -> None:
    want = expected(batch_viewer)
    folder = tmp_path / "labels"
    (folder / "sub").mkdir(parents=True)
    mine = folder / "sub" / "two.json"
    mine.write_text("my own work")
    asked: list[list[Path]] = []
    batch_viewer.exporter.confirm_overwrite = lambda existing, _where: bool(asked.append(existing))
    batch_viewer.exporter.export_all(ExportFormat.LABELME, str(folder))
    wait_written(harness, batch_viewer)
    assert asked == [[mine]] and mine.read_text() == "my own work", "nothing replaced without a yes"
    assert "cancelled" in batch_viewer.window.statusBar().currentMessage()
    batch_viewer.exporter.confirm_overwrite = lambda _existing, _where: True
    batch_viewer.exporter.export_all(ExportFormat.LABELME, str(folder))
    wait_written(harness, batch_viewer)
    for sub in ("", "sub"):
        for annotation in AnnotationSet.from_labelme(folder / sub):
            image = (folder / sub / annotation.image_id).resolve()
            name = image.relative_to((tmp_path / "photos").resolve()).as_posix()
            got = sorted(tuple(round(v, 1) for v in b.ltrb) for b in annotation.boxes)
            assert same_boxes(got, want[name]), (name, got)

    yolo = tmp_path / "yolo"
    batch_viewer.exporter.export_all(ExportFormat.YOLO, str(yolo))
    wait_written(harness, batch_viewer)
    assert (yolo / "classes.txt").read_text() == "face\n"
    assert len((yolo / "sub" / "two.txt").read_text().splitlines()) == 2
    assert (yolo / "sub" / "coffee.txt").read_text() == ""

    voc = tmp_path / "voc"
    batch_viewer.exporter.export_all(ExportFormat.VOC, str(voc))
    wait_written(harness, batch_viewer)
    (two,) = [a for a in AnnotationSet.from_pascal_voc(voc / "sub") if a.image_id == "two.png"]
    assert len(two.boxes) == 2 and {b.label for b in two.boxes} == {"face"}

    crops = tmp_path / "crops"
    batch_viewer.exporter.export_all(ExportFormat.CROPS, str(crops))
    wait_written(harness, batch_viewer)
    files = sorted(p.relative_to(crops).as_posix() for p in crops.rglob("*.png"))
    assert files == ["face_01_face.png", "sub/two_01_face.png", "sub/two_02_face.png"]
    x1, y1, x2, y2 = want["face.png"][0]
    crop = read_image(crops / "face_01_face.png")
    assert abs(crop.shape[1] - (x2 - x1)) <= 2 and abs(crop.shape[0] - (y2 - y1)) <= 2


def test_save_dialogs_start_in_the_last_folder_with_a_suggested_name(
    harness: Harness, batch_viewer: Viewer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[str] = []
    target = tmp_path / "out" / "mine"
    target.parent.mkdir()

    def dialog(_parent: object, _title: str, start: str, _filter: str, **_kw: object) -> tuple[str, str]:
        starts.append(start)
        return str(target), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", dialog)
    batch_viewer.exporter.export_all(ExportFormat.COCO)
    wait_written(harness, batch_viewer)
    assert Path(starts[0]).name.startswith("detections-coco-") and starts[0].endswith(".json")
    assert (tmp_path / "out" / "mine.json").is_file(), "the suffix is added"
    batch_viewer.exporter.export_png()
    wait_written(harness, batch_viewer)
    start = Path(starts[1])
    assert start.parent == target.parent, "the next dialog starts where the last export went"
    assert start.name == f"{Path(batch_viewer.gallery.current_key or '').stem}-annotated.png"


def test_export_dialogs_start_in_the_images_folder_and_a_new_yolo_folder_is_created(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path, qtbot: QtBot
) -> None:
    photos = tmp_path / "shoot" / "photos"
    photos.mkdir(parents=True)
    for i in range(2):
        write_png(photos / f"p{i}.png", data.astronaut())
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(photos)])
    harness.connected(viewer)
    harness.run(until(lambda: len(viewer.gallery.results) == 2, what="the batch"))
    assert viewer.exporter.start_folder() == str(photos), "COCO / YOLO dialogs start by the images"
    harness.close(viewer)
    # The folder dialog takes a folder that does not exist yet, and creates it.
    dialog = NewFolderDialog(None, "Folder for the YOLO labels", str(tmp_path))
    qtbot.addWidget(dialog)
    name = dialog.findChild(QLineEdit, "fileNameEdit")
    assert name is not None
    name.setText("labels-new")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert (tmp_path / "labels-new").is_dir() and dialog.selectedFiles() == [str(tmp_path / "labels-new")]
