"""The viewer's server panel says which input size a model is fed and where it came from
(an exporter's metadata, the model's shape, a profile, or a default it names)."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.inference.introspection.discovery import ModelInfo
from app.inference.profiles.profile import detect_profile
from app.pipeline.connection.state import ConnectionState
from app.ui.server.server_panel import ServerPanel, describe_model
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
