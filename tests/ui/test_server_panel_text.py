"""The viewer's server panel says which input size a model is fed and where it came from
(an exporter's metadata, the model's shape, a profile, or a default it names)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.inference.introspection.discovery import ModelInfo
from app.inference.profiles.profile import detect_profile
from app.pipeline.connection.state import ConnectionState
from app.server.embedded import EmbeddedServer
from app.ui.server.server_panel import ServerPanel, describe_model
from tests.ui.viewer_fixtures import Harness, until
from tests.unit.test_export_metadata import DYNAMIC_IN, RAW_OUT, ULTRA
from tests.unit.test_profile import model


def _info(parameters: dict[str, str] | None) -> ModelInfo:
    metadata, config = model(DYNAMIC_IN, RAW_OUT, 4, parameters)
    profile = detect_profile(metadata, config)
    return ModelInfo("m", "1", "python", metadata["inputs"], metadata["outputs"], 4, None, [], profile)


def test_the_panel_names_where_the_input_size_came_from() -> None:
    exported = describe_model(_info({"metadata": str(ULTRA)}))
    assert "letterbox 320x320 (from Ultralytics metadata imgsz)" in exported
    assert "labels: cat, dog, face" in exported and "IoU 0.70" in exported
    bare = describe_model(_info(None))
    assert "letterbox 640x640 (from a default: the input's height and width are dynamic" in bare


def test_the_panel_says_which_layout_and_why() -> None:
    text = describe_model(_info({"metadata": str(ULTRA)}))
    assert "layout: raw YOLOv8/11 [4 + C, N] output0 [-1, 22, -1], 18 classes" in text


def test_a_long_state_stays_on_one_line_elided_and_the_model_box_does_not_move(qtbot: QtBot) -> None:
    panel = ServerPanel()
    qtbot.addWidget(panel)
    panel.resize(360, 400)
    panel.show()
    panel.set_state(ConnectionState.CONNECTED, "ready")
    QApplication.processEvents()
    label, model_y = panel.state_label, panel.model_combo.mapTo(panel, panel.model_combo.rect().topLeft()).y()
    one_line = label.height()
    long = "model pose_landmark: " + "UNAVAILABLE: the stub process failed to start again and again " * 3
    panel.set_state(ConnectionState.CONNECTED, long)
    QApplication.processEvents()
    assert label.height() == one_line, "one line, never wrapped"
    assert panel.model_combo.mapTo(panel, panel.model_combo.rect().topLeft()).y() == model_y
    shown = label.shown_tail()
    assert shown.endswith("…") and long.startswith(shown[:-1].rstrip(" :,;·-")), shown
    assert label.toolTip() == long and long in panel.state_text().replace("&amp;", "&")
    panel.resize(label.sizeHint().width() + 200, 400)  # room again: the whole message
    QApplication.processEvents()
    assert label.shown_tail() == long


@pytest.mark.gui
@pytest.mark.slow
def test_the_pipelines_stage_models_are_grouped_under_their_pipeline(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    combo = viewer.window.server_panel.model_combo

    def items() -> list[tuple[str, str]]:
        return [(combo.itemText(i), str(combo.itemData(i))) for i in range(combo.count())]

    harness.run(until(lambda: any("stage of" in text for text, _ in items()), what="the stages marked"))
    names = [name for _, name in items()]
    texts = dict((name, text) for text, name in items())
    pairs = (
        ("face_landmark", "face_mesh"),
        ("pose_detector", "person_pose"),
        ("pose_landmark", "person_pose"),
    )
    for stage, pipeline in pairs:
        assert texts[stage].strip().startswith("↳") and f"stage of {pipeline}" in texts[stage], texts[stage]
        assert names.index(pipeline) < names.index(stage), "under its pipeline"
        between = names[names.index(pipeline) + 1 : names.index(stage)]
        assert all(f"stage of {pipeline}" in texts[n] for n in between), between
    for picked in ("face_detector", "face_mesh", "person_pose", "person_segmentation"):
        assert texts[picked] == picked, "the models a user picks: unmarked, at the first level"
    assert combo.currentData() == "face_detector", "the model in use (a stage of face_mesh too) stays plain"
    harness.close(viewer)
