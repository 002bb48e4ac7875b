"""Analyse > Evaluate against labels… against the real server: the face detector on a small
hand-made dataset (tests/evaluation_data.py's writers). The panel shows the `evaluate`
command's figures; the dataset's images are the batch; a confusion matrix cell narrows the
thumbnails to exactly its images; the score slider moves the operating point; the picture shows
the labelled objects dashed and the errors marked; cancel, export and the A/B window's mAPs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, QRect, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from app.drawing.marks import MarkKind
from app.evaluation.datasets import DatasetFormat
from app.evaluation.iou_type import IouType
from app.server.embedded import EmbeddedServer
from app.ui.compare.compare_window import CompareChoice
from app.ui.evaluation.evaluate_dialog import AUTO, EvaluateDialog, EvaluationChoice
from app.ui.evaluation.evaluation_panel import figure, metric_keys
from app.ui.state.viewer_state import Mode
from app.ui.viewer import Viewer
from tests.evaluation_data import Img, Obj, face_images, write_dataset
from tests.integration.test_cli_evaluate import CLASSES, FIXED
from tests.integration.test_cli_infer import run_cli
from tests.ui.viewer_fixtures import Harness, slow_image, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.fixture(scope="module")
def faces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five 640x480 images: heads at a few sizes, one labelled face with no head (a miss), one
    head nobody labelled (a false positive); Pascal VOC."""
    dataset, _ = write_dataset("voc", tmp_path_factory.mktemp("faces") / "data", face_images(), ["face"])
    return dataset


def cli_report(dataset: Path, out: Path, *models: str, url: str) -> dict[str, Any]:
    args = [a for m in models for a in ("--model", m)]
    done = run_cli("evaluate", "--url", url, str(dataset), *args, "--output", str(out), timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


@pytest.fixture(scope="module")
def command_report(
    triton: EmbeddedServer, faces: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """What `python -m app evaluate` says of the face detector on the dataset."""
    return cli_report(faces, tmp_path_factory.mktemp("cli") / "report.json", url=triton.grpc_url)


def test_the_dialog_gives_back_the_format_and_iou_type_it_shows(qtbot: Any) -> None:
    """Every format (or auto) and IoU type the dialog offers comes back as the typed choice."""
    dialog = EvaluateDialog("face_detector")
    qtbot.addWidget(dialog)
    for fmt in (None, *DatasetFormat):
        for iou_type in IouType:
            choice = EvaluationChoice("labels.json", fmt, "images", "map.json", iou_type)
            dialog.set_choice(choice)
            assert dialog.format.currentText() == (fmt or AUTO)
            assert dialog.iou_type.currentData() == iou_type.value
            got = dialog.choice()
            assert got == choice and type(got.iou_type) is IouType
            assert fmt is None or type(got.fmt) is DatasetFormat


def evaluated(harness: Harness, url: str, dataset: Path, model: str = "face_detector") -> Viewer:
    """A viewer that evaluated `model` on `dataset` (started from the Analyse menu's dialog,
    the dataset dropped on it)."""
    viewer = harness.viewer(url, model)
    harness.connected(viewer)
    action = viewer.analysis.evaluate_action
    assert action.isEnabled()
    action.trigger()
    dialog = viewer.evaluation.dialog
    assert dialog is not None and dialog.isVisible()
    drop_on(dialog, dataset)
    assert dialog.choice() == EvaluationChoice(str(dataset))
    dialog.accept()
    controller = viewer.evaluation.controller
    harness.run(until(lambda: controller.report is not None, what="the evaluation"))
    harness.run(until(lambda: controller.confusion is not None, what="the confusion matrix"))
    return viewer


def drop_on(widget: Any, path: Path) -> None:
    """A real drag enter and drop (labelme's way): QMimeData with the file's URL."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    centre = widget.rect().center()
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(centre, Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(centre), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(widget, drop)
    assert drop.isAccepted()


def names(keys: list[str] | set[str]) -> list[str]:
    return sorted(Path(k).name for k in keys)


def test_the_panel_shows_the_command_s_figures_and_the_images_become_the_batch(
    harness: Harness, triton: EmbeddedServer, faces: Path, command_report: dict[str, Any]
) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    controller, panel = viewer.evaluation.controller, viewer.evaluation.panel
    report = controller.report
    assert report is not None
    # The same report as the command: metrics, per class, the confusion matrix, the worst images.
    for key in ("metrics", "per_class", "confusion_matrix", "worst_images"):
        assert report[key] == command_report[key], key
    assert report["dataset"]["images"] == 5 and report["dataset"]["annotations"] == 7
    # ... and what the panel shows is those figures.
    assert viewer.evaluation.dock.isVisible()
    for key in metric_keys("bbox"):
        assert panel.metric_labels[key].text() == figure(command_report["metrics"][key]), key
    row = command_report["per_class"][0]
    assert panel.cell_text("face", "AP") == figure(row["ap"])
    assert panel.cell_text("face", "AP50") == figure(row["ap50"])
    assert panel.cell_text("face", "objects") == "7"
    for column, key in (("precision", "precision"), ("recall", "recall"), ("F1", "f1")):
        assert panel.cell_text("face", column) == figure(row[key]), column
    assert (panel.cell_text("face", "TP"), panel.cell_text("face", "FP"), panel.cell_text("face", "FN")) == (
        str(row["tp"]),
        str(row["fp"]),
        str(row["fn"]),
    )
    assert "done: 5 images evaluated" in panel.status.text()
    # The dataset's images are the viewer's batch (thumbnails, results, browsing).
    window = viewer.window
    assert viewer.state.mode is Mode.BATCH
    assert names(window.strip.keys()) == ["f1.png", "f2.png", "f3.png", "f4.png", "f5.png"]
    assert all(r.ok for r in viewer.state.results.values()) and len(viewer.state.results) == 5
    assert window.batch_panel.summary.text().startswith("5 inputs · 5 ok")
    # The PR curve of the class, its operating point on it.
    curves = panel.pr_curves.curves
    assert [c.name for c in curves] == ["face"] and curves[0].point == pytest.approx(
        (row["recall"], row["precision"]), abs=1e-6
    )
    # Thumbnails by errors: the worst first, as the report's worst images.
    panel.sort_check.setChecked(True)
    worst = [Path(w["source"]).name for w in command_report["worst_images"]]
    assert names(window.strip.visible_keys()[: len(worst)]) == sorted(worst)
    assert [Path(k).name for k in window.strip.visible_keys()][: len(worst)] == worst
    viewer.browser.first()
    harness.run(until(lambda: viewer.state.shown_key is not None, what="the worst image shown"))
    assert Path(viewer.state.shown_key or "").name == worst[0]
    panel.sort_check.setChecked(False)
    assert names(window.strip.visible_keys()) == names(window.strip.keys())


def test_the_picture_shows_the_labels_dashed_and_the_errors_marked(
    harness: Harness, triton: EmbeddedServer, faces: Path
) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    view = viewer.window.view

    def show(name: str) -> list[Any]:
        keys = viewer.window.strip.keys()
        key = next(k for k in keys if Path(k).name == name)
        viewer.browser.select(key)
        harness.run(until(lambda: viewer.state.shown_key == key, what=f"{name} shown"))
        return view.mark_items()

    # f4: a labelled face with no head: missed (red, dashed); f5: a head nobody labelled: the
    # model's box is marked a false positive; f2: one face, found (dashed, beside the box).
    marks = show("f4.png")
    assert [m.shape_.kind for m in marks] == [MarkKind.MISSED]
    assert marks[0].shape_.outline.dashed and marks[0].text() == "missed face"
    assert marks[0].shape_.outline.box == (300.0, 200.0, 360.0, 270.0)
    marks = show("f5.png")
    assert [m.shape_.kind for m in marks] == [MarkKind.FALSE_POSITIVE]
    assert not marks[0].shape_.outline.dashed
    boxes = [item.detection.box for item in view.box_items()]
    # The box evaluated: the record's, to hundredths of a pixel.
    assert len(boxes) == 1 and marks[0].shape_.outline.box == pytest.approx(boxes[0], abs=0.005)
    marks = show("f2.png")
    assert [m.shape_.kind for m in marks] == [MarkKind.FOUND] and marks[0].shape_.outline.dashed
    assert len(view.box_items()) == 1
    # Every image: the picture draws the detections the operating point keeps (each class's
    # best F1 here: a detection scoring exactly the threshold is kept, and drawn).
    evaluation = viewer.evaluation.controller.evaluation
    assert evaluation is not None
    point = evaluation.operating_point()
    for i, image in enumerate(evaluation.dataset.images):
        show(image.name)
        assert len(view.box_items()) == point.image_tp[i] + point.image_fp[i], image.name
    # Painted by the one renderer: the dashed outline reaches the screen.
    image = view.grab().toImage()
    assert not image.isNull()


def test_a_confusion_matrix_cell_narrows_the_thumbnails_to_exactly_its_images(
    harness: Harness, triton: EmbeddedServer, faces: Path
) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    controller, panel = viewer.evaluation.controller, viewer.evaluation.panel
    evaluation = controller.evaluation
    assert evaluation is not None
    point = evaluation.operating_point()
    images = evaluation.dataset.images
    panel.tabs.setCurrentIndex(2)
    heat_map = panel.heat_map
    heat_map.resize(360, 320)
    QApplication.processEvents()
    strip = viewer.window.strip

    def click(row: int, column: int) -> None:
        centre = heat_map.cell_rect(row, column).center()
        QTest.mouseClick(
            heat_map,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
            QPoint(round(centre.x()), round(centre.y())),
        )

    # One class: labels face, background. (face, background): the faces missed; (background,
    # face): the false detections. Expected from the per-image errors, not from the matrix.
    missed = {images[i].name for i in np.flatnonzero(point.image_fn).tolist()}
    false = {images[i].name for i in np.flatnonzero(point.image_fp).tolist()}
    found = {images[i].name for i in np.flatnonzero(point.image_tp).tolist()}
    assert (missed, false, found) == ({"f4.png"}, {"f5.png"}, {"f1.png", "f2.png", "f3.png"})
    for cell, expected in (((0, 1), missed), ((1, 0), false), ((0, 0), found)):
        click(*cell)
        assert heat_map.selected == cell
        assert names(strip.visible_keys()) == sorted(expected), cell
        assert names(controller.cell_keys(cell)) == sorted(expected)
        assert viewer.state.current_key in strip.visible_keys()  # the browser moved into the cell
        assert "only " in viewer.window.batch_bar.info.text()
    # The same cell again: every image.
    click(0, 0)
    assert heat_map.selected is None and len(strip.visible_keys()) == 5
    assert viewer.state.only is None


def test_the_score_slider_moves_the_operating_point(
    harness: Harness, triton: EmbeddedServer, faces: Path
) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    controller, panel = viewer.evaluation.controller, viewer.evaluation.panel
    evaluation = controller.evaluation
    assert evaluation is not None
    scores = np.sort(evaluation.detections.score)
    # Two thresholds that keep different detections: all of them, and only the best one.
    low = float(np.floor(scores[0] * 100) / 100)
    high = float(np.floor(scores[-1] * 100) / 100)
    assert np.count_nonzero(scores >= high) < np.count_nonzero(scores >= low)
    seen = []
    for value in (low, high):
        panel.slider.setValue(round(value * 100))
        expected = evaluation.operating_point(value)
        c = expected.classes[0]
        assert controller.point is not None and controller.point.classes[0] == c
        shown = [panel.cell_text("face", col) for col in ("precision", "recall", "F1", "TP", "FP", "FN")]
        assert shown == [figure(c.precision), figure(c.recall), figure(c.f1), str(c.tp), str(c.fp), str(c.fn)]
        assert panel.cell_text("face", "score ≥") == f"{value:.2f}"
        total = expected.total()
        assert (
            f"precision {figure(total.precision)} · recall {figure(total.recall)}" in panel.point_line.text()
        )
        assert panel.slider_value.text() == f"{value:.2f}"
        # The picture draws what the operating point keeps.
        assert viewer.window.thresholds.score() == pytest.approx(value)
        seen.append(shown)
        harness.run(
            until(
                lambda tp=c.tp: (
                    controller.confusion is not None and int(controller.confusion.matrix[0, 0]) == tp
                ),
                what="the matrix at the new point",
            )
        )
    assert seen[0] != seen[1]
    # Back to each class's best F1: the report's figures.
    panel.best_button.click()
    row = controller.report["per_class"][0] if controller.report else {}
    assert panel.cell_text("face", "F1") == figure(row["f1"]) and panel.slider_value.text() == "best F1"


def test_export_writes_the_report_csvs_and_pngs(
    harness: Harness, triton: EmbeddedServer, faces: Path, command_report: dict[str, Any], tmp_path: Path
) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    controller, panel = viewer.evaluation.controller, viewer.evaluation.panel
    assert panel.export_button.isEnabled()
    out = tmp_path / "export"
    written = harness.run(controller.export_to(str(out)))
    assert sorted(p.name for p in written) == [
        "confusion_matrix.png",
        "images.csv",
        "per_class.csv",
        "pr_face.png",
        "report.json",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in written)  # nothing left over
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["metrics"] == command_report["metrics"] and "operating_point" not in report
    lines = (out / "images.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "image,source,tp,fp,fn,errors" and len(lines) == 6
    for png in ("pr_face.png", "confusion_matrix.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # At a score threshold of the slider: the files say so, and are replaced whole.
    panel.slider.setValue(95)
    harness.run(controller.export_to(str(out)))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["operating_point"]["score"] == 0.95
    point = controller.point
    assert point is not None
    per_class = (out / "per_class.csv").read_text(encoding="utf-8").splitlines()
    assert per_class[1].split(",")[-3:] == [
        str(point.classes[0].tp),
        str(point.classes[0].fp),
        str(point.classes[0].fn),
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in written)


def test_cancel_stops_the_run_and_evaluates_the_images_answered(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    # slow_faces answers after pixel[0,0,0] x 10 ms (here 0.6 s; one wait per server batch):
    # 40 images at 8 in flight take several seconds.
    images = []
    for i in range(40):
        pixels = slow_image(600, 64)[..., ::-1].copy()
        images.append(Img(f"s{i:02d}.png", 64, 64, [Obj("face", (16.0, 16.0, 48.0, 48.0))], pixels))
    dataset, _ = write_dataset("yolo", tmp_path / "slow", images, ["face"])
    viewer = harness.viewer(triton.grpc_url, "slow_faces")
    harness.connected(viewer)
    controller = viewer.evaluation.controller
    assert harness.run(viewer.evaluation.start(EvaluationChoice(str(dataset))))
    harness.run(
        until(lambda: controller.run is not None and len(controller.run.results) >= 1, what="a first result")
    )
    assert viewer.evaluation.panel.cancel_button.isVisible()
    viewer.window.batch_panel.cancel_button.click()  # the batch's Cancel stops the evaluation too
    harness.run(until(lambda: controller.report is not None, what="the evaluation of what was answered"))
    report = controller.report
    assert report is not None and report["interrupted"] is True
    evaluated_images = report["dataset"]["evaluated_images"]
    assert 1 <= evaluated_images < 40 and report["not_started"] + len(report["dataset"]["failed_images"]) > 0
    assert "cancelled" in viewer.evaluation.panel.status.text()
    assert not viewer.evaluation.panel.cancel_button.isVisible()
    # slow_faces' one box is the middle half: exactly the labelled face, on every image answered.
    assert report["per_class"][0]["tp"] == evaluated_images and report["per_class"][0]["fp"] == 0
    summary = viewer.window.batch_panel.summary.text()
    assert "cancelled" in summary


def test_the_compare_window_shows_each_side_s_map_on_the_dataset(
    harness: Harness, triton: EmbeddedServer, faces: Path, tmp_path: Path
) -> None:
    expected = cli_report(faces, tmp_path / "ab.json", "face_detector", "fixed_versions", url=triton.grpc_url)
    viewer = evaluated(harness, triton.grpc_url, faces)
    assert harness.run(
        viewer.analysis.start_compare(CompareChoice("face_detector", "", "fixed_versions", "", []))
    )
    accuracy = viewer.evaluation.accuracy
    panel = viewer.analysis.compare.window.panel
    assert accuracy.run_action.isEnabled()
    accuracy.run_action.trigger()
    harness.run(until(lambda: bool(accuracy.figures), what="the mAPs of both sides"))
    for side, report in (("a", expected["a"]), ("b", expected["b"])):
        cell = next(c for (name, s), c in panel.accuracy.items() if name == "mAP (dataset)" and s == side)
        assert cell.isVisible() and cell.text() == figure(report["metrics"]["map"])
        cell50 = next(c for (name, s), c in panel.accuracy.items() if name == "mAP50 (dataset)" and s == side)
        assert cell50.text() == figure(report["metrics"]["map50"])
    assert expected["a"]["metrics"]["map"] != expected["b"]["metrics"]["map"]
    assert "on 5 of the 5 images" in panel.accuracy[("mAP (dataset)", "a")].toolTip()


def test_a_bad_dataset_says_what_and_where_and_the_rest_is_evaluated(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    panel, controller = viewer.evaluation.panel, viewer.evaluation.controller
    # No such dataset: said in the banner and the panel, nothing else changes.
    missing = tmp_path / "nowhere"
    assert not harness.run(viewer.evaluation.start(EvaluationChoice(str(missing))))
    assert f"{missing}: no such file or folder" in panel.status.text()
    assert str(missing) in viewer.window.banner.text() and controller.run is None
    # A malformed line: named with its file and line; the rest of the dataset is evaluated.
    dataset, _ = write_dataset("yolo", tmp_path / "yolo", face_images()[:3], ["face"])
    label = dataset / "labels" / "f2.txt"
    label.write_text(label.read_text() + "0 0.5 zero 0.1 0.1\n")
    assert harness.run(viewer.evaluation.start(EvaluationChoice(str(dataset))))
    harness.run(until(lambda: controller.report is not None, what="the evaluation"))
    report = controller.report
    assert report is not None and report["dataset"]["dropped"]["annotations"] == 1
    assert report["dataset"]["evaluated_images"] == 3
    listed = [panel.problems.item(i).text() for i in range(panel.problems.count())]
    assert len(listed) == 1 and str(label) in listed[0] and "line 2" in listed[0]
    assert "dropped: 1 annotation, 0 images" in panel.dataset_line.text()


def _ancestors(widget: QWidget) -> list[QWidget]:
    found, parent = [], widget.parentWidget()
    while parent is not None:
        found.append(parent)
        parent = parent.parentWidget()
    return found


def test_the_panel_fits_a_laptop_screen(harness: Harness, triton: EmbeddedServer, faces: Path) -> None:
    viewer = evaluated(harness, triton.grpc_url, faces)
    window, panel = viewer.window, viewer.evaluation.panel
    hint = window.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 640, hint
    window.resize(1280, 720)
    QApplication.processEvents()
    assert (window.width(), window.height()) == (1280, 720)
    # The dock's content scrolls (app/ui/base/scrolling.py): its viewport lies in the window, and
    # each control, scrolled to, is wholly in that viewport.
    scroll = next(w for w in _ancestors(panel) if isinstance(w, QScrollArea))
    viewport = scroll.viewport()
    assert window.rect().contains(QRect(viewport.mapTo(window, QPoint(0, 0)), viewport.size()))
    for part in (panel.metrics_grid.itemAt(0).widget(), panel.slider, panel.tabs, panel.export_button):
        assert part is not None
        scroll.ensureWidgetVisible(part, 0, 0)
        QApplication.processEvents()
        corner = part.mapTo(viewport, QPoint(0, 0))
        assert viewport.rect().contains(QRect(corner, part.size())), type(part).__name__
    assert panel.table.viewport().height() >= 3 * panel.table.verticalHeader().defaultSectionSize()
    for tab, widget in ((1, panel.pr_curves), (2, panel.heat_map)):
        panel.tabs.setCurrentIndex(tab)
        QApplication.processEvents()
        seen = widget.visibleRegion().boundingRect()
        assert seen.width() >= 200 and seen.height() >= 150, (type(widget).__name__, seen)
    view = window.view
    assert view.width() >= 600 and view.height() >= 250, view.size()


def test_confusions_between_classes_narrow_to_their_images(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    """fixed_versions on the planted dataset of the command's tests (three classes): a car the
    model calls a face, a hand nothing finds, false faces and cars (tests/models/README.md)."""
    dataset, _ = write_dataset("coco", tmp_path / "fixed", FIXED, CLASSES)
    viewer = evaluated(harness, triton.grpc_url, dataset, "fixed_versions")
    panel, strip = viewer.evaluation.panel, viewer.window.strip
    panel.tabs.setCurrentIndex(2)
    panel.heat_map.resize(360, 320)
    QApplication.processEvents()
    assert panel.heat_map.labels == ["face", "hand", "car", "background"]
    face, hand, car, background = range(4)
    for cell, expected in (
        ((car, face), ["a_confused.png"]),
        ((hand, background), ["e_shifted.png"]),
        ((face, background), ["b_elsewhere.png"]),
        ((background, face), ["b_elsewhere.png", "c_empty.png"]),
        ((background, car), ["a_confused.png", "c_empty.png"]),
        ((car, car), ["b_elsewhere.png", "d_exact.png", "e_shifted.png"]),
    ):
        centre = panel.heat_map.cell_rect(*cell).center()
        point = QPoint(round(centre.x()), round(centre.y()))
        QTest.mouseClick(panel.heat_map, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
        assert names(strip.visible_keys()) == expected, cell
    assert "car found (3 images)" in viewer.window.batch_bar.info.text()
    panel.show_all_button.click()
    assert len(strip.visible_keys()) == len(FIXED) and panel.heat_map.selected is None
