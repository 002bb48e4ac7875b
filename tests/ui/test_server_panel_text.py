"""The viewer's server panel says which input size a model is fed and where it came from
(an exporter's metadata, the model's shape, a profile, or a default it names)."""

from __future__ import annotations

from app.inference.introspection.discovery import ModelInfo
from app.inference.profiles.profile import detect_profile
from app.ui.server.server_panel import describe_model
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
