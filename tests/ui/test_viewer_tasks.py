"""The whole window with the two bundled models: the face's six landmarks, then (switching
model without a restart) the person mask, with the opacity slider; the fixed classifier's
top-k in the classes panel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from skimage import data

from app.server.embedded import EmbeddedServer
from app.ui.viewer import Viewer
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def _model_is(viewer: Viewer, name: str) -> bool:
    session = viewer.connection.session
    return session is not None and session.info is not None and session.info.name == name


def test_landmarks_then_the_person_mask_after_switching_model(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    photo = data.astronaut()
    path = write_png(tmp_path / "astronaut.png", photo)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(path)])
    view = viewer.window.view
    harness.run(until(lambda: len(view.keypoint_items()) == 1, what="the face's landmarks"))
    (landmarks,) = view.keypoint_items()
    assert len(landmarks.visible_points()) == 6
    (box,) = view.box_items()
    rect = box.rect()
    assert all(rect.left() - 5 <= p.x() <= rect.right() + 5 for p in landmarks.visible_points())
    assert "right eye" in landmarks.toolTip()
    assert "task: pose" in viewer.window.server_panel.details.toPlainText()

    viewer.window.server_panel.model_chosen.emit("person_segmentation")
    harness.run(until(lambda: _model_is(viewer, "person_segmentation"), what="person_segmentation"))
    viewer.open_paths([str(path)])
    harness.run(until(lambda: len(view.mask_items()) == 1, what="the person mask"))
    assert view.box_items() == [] and view.keypoint_items() == []
    (item,) = view.mask_items()
    mask = item.mask.full()
    assert mask.shape == photo.shape[:2]
    assert mask[300:500, 150:350].mean() > 0.98 and mask[20:260, 370:460].mean() < 0.02
    viewer.window.thresholds.opacity_slider().setValue(80)
    assert item.opacity() == pytest.approx(0.8)
    assert viewer.window.classes_panel.isHidden()


def test_classes_panel_shows_the_top_classes(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    image = np.empty((120, 160, 3), np.uint8)
    image[:] = (200, 100, 50)
    path = write_png(tmp_path / "orange.png", image)
    viewer = harness.viewer(triton.grpc_url, "fixed_classify", open_paths=[str(path)])
    panel = viewer.window.classes_panel
    harness.run(until(lambda: len(panel.rows()) == 5, what="five classes"))
    assert [label for label, _ in panel.rows()] == ["red", "green", "three", "blue", "one"]
    assert not panel.isHidden()
    item = viewer.window.view.classes_item()
    assert item is not None and item.lines[0].startswith("red")
