"""A semantic segmentation as a first-class result in the real window (real server): the
thumbnails and the info line say which classes are present and how much of the picture they
cover, the Detections panel lists the masks with their area, the sliders that do not apply
say why, the exports hold the masks (or warn), and the compare window fills each model's masks
in that model's colour in both layouts."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from pycocotools.coco import COCO
from skimage import data

from app.pipeline.compare import Side
from app.pipeline.exports.formats import ExportFormat
from app.server.embedded import EmbeddedServer
from app.ui.compare.compare_view import SIDE_COLORS, Layout
from app.ui.compare.compare_window import CompareChoice
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "photos"
    root.mkdir()
    write_png(root / "a_astronaut.png", data.astronaut())
    write_png(root / "b_plain.png", np.full((200, 300, 3), 90, np.uint8))  # nobody there
    return root


def test_a_semantic_models_results_are_counted_listed_and_exported(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    root = _folder(tmp_path)
    viewer = harness.viewer(triton.grpc_url, "person_segmentation", open_paths=[str(root)])
    w = viewer.window
    harness.run(until(lambda: job_done(viewer) and viewer.gallery.current_image is not None, what="batch"))
    astronaut, plain = str(root / "a_astronaut.png"), str(root / "b_plain.png")
    harness.run(until(lambda: w.strip.detection_count(astronaut) is not None, what="the counts"))
    # The thumbnail counts the classes present (not a hollow "0") and says what they cover.
    assert w.strip.detection_count(astronaut) == 1 and w.strip.detection_count(plain) == 0
    tip = w.strip.item_for(astronaut).toolTip()  # type: ignore[union-attr]
    assert re.search(r"person \d+ %", tip) and "no detections" not in tip, tip
    # The info line: "1 / 2 · a_astronaut.png · person 27 % · 12.3 ms".
    viewer.browser.first()
    harness.run(until(lambda: viewer.gallery.current_key == astronaut and viewer.state.shown_key, what="1"))
    assert re.search(r"^1 / 2 · a_astronaut\.png · person \d+ % · [\d.]+ ms$", viewer.browser.info())
    # The Detections panel lists the mask, its box and area; it does not say "nothing found".
    panel = w.detections_panel
    panel.refresh()
    assert panel.table.rowCount() == 1 and panel.empty.isHidden()
    cells = [panel.table.item(0, col).text() for col in range(panel.table.columnCount())]  # type: ignore[union-attr]
    (mask,) = viewer.gallery.current_result().masks  # type: ignore[union-attr]
    assert cells[1] == "person" and cells[4].startswith(f"{mask.area} (")
    panel.select(0)  # the mask highlighted
    ((_semantic, item),) = w.view.semantic_items()
    assert item.opacity() > w.view.mask_opacity()
    # The score and IoU sliders do not apply, and say why; the opacity slider does.
    thresholds = w.thresholds
    assert not thresholds.score_slider().isEnabled() and not thresholds.iou_slider().isEnabled()
    assert "semantic segmentation" in thresholds.score_slider().toolTip()
    assert thresholds.opacity_slider().isEnabled()
    # The filter "with detections" keeps the picture with a person.
    viewer.browser.bar.filter.setCurrentIndex(viewer.browser.bar.filter.findData("with"))
    assert w.strip.visible_keys() == [astronaut]
    viewer.browser.bar.filter.setCurrentIndex(viewer.browser.bar.filter.findData("class:person"))
    assert w.strip.visible_keys() == [astronaut]
    viewer.browser.bar.filter.setCurrentIndex(0)

    # COCO holds the mask; Pascal VOC cannot, and the banner says so.
    out = tmp_path / "coco.json"
    viewer.exporter.export_all(ExportFormat.COCO, str(out))
    harness.run(until(lambda: not viewer.exporter.running, what="the COCO export"))
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(out))
    anns = coco.loadAnns(coco.getAnnIds())
    assert anns and sum(a["area"] for a in anns) == mask.area
    viewer.exporter.export_all(ExportFormat.VOC, str(tmp_path / "voc"))
    harness.run(until(lambda: not viewer.exporter.running, what="the VOC export"))
    assert "Pascal VOC holds boxes only" in w.banner.text()

    # A detector: the score and IoU sliders apply again, the opacity slider does not.
    w.server_panel.model_chosen.emit("face_detector")
    harness.run(until(lambda: viewer.state.model == "face_detector", what="face_detector"))
    assert thresholds.score_slider().isEnabled() and not thresholds.opacity_slider().isEnabled()
    assert "gives no masks" in thresholds.opacity_slider().toolTip()


def test_the_compare_window_fills_each_models_masks_in_its_colour_in_both_layouts(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "one"
    folder.mkdir()
    write_png(folder / "astronaut.png", cv2.resize(data.astronaut(), (320, 320)))
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    choice = CompareChoice("person_segmentation", "", "person_segmentation", "", [])
    assert harness.run(viewer.analysis.start_compare(choice))
    compare = viewer.analysis.compare
    compare.open_paths([str(folder)])
    shown = lambda: compare.shown_key is not None and bool(compare.window.view.drawn_masks())  # noqa: E731
    harness.run(until(shown, what="a pair"))
    view = compare.window.view

    def colours(side: Side) -> set[str]:
        return {item.color.name() for s, item in view.drawn_masks() if s is side}

    for layout in (Layout.SIDE_BY_SIDE, Layout.OVERLAY):
        compare.set_layout(layout)
        assert colours(Side.A) == {SIDE_COLORS[Side.A].name()}, layout
        assert colours(Side.B) == {SIDE_COLORS[Side.B].name()}, layout
    # Side by side, each view holds its own model's masks only (none in the class colours).
    assert all(not v.semantic_items() for v in view.views.values())
    assert {s for s, _ in view.layers[Side.B].masks} == {Side.B}
