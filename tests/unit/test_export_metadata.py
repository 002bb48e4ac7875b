"""Ultralytics' metadata (config parameter `metadata`, as its Triton guide writes it) read
safely, and what it changes in a detected profile: class names, the input size of dynamic
dims (and where a size came from), the task, Ultralytics' thresholds."""

from __future__ import annotations

import json

import pytest

from app.inference.profile_kinds import Preprocess, Task
from app.inference.profiles.export_metadata import (
    config_metadata,
    metadata_from_mapping,
    onnx_file_metadata,
    parse_metadata_text,
)
from app.inference.profiles.profile import ProfileError, apply_overrides, detect_profile, input_side_needed
from app.inference.profiles.profile_types import (
    SIZE_DEFAULT,
    SIZE_FROM_METADATA,
    SIZE_FROM_PROFILE,
    SIZE_FROM_SHAPE,
)
from tests.unit.test_profile import model

NAMES = {i: name for i, name in enumerate(["cat", "dog", "face", "hand"] + [f"n{i}" for i in range(14)])}
# What Ultralytics' exporter writes (`str(exporter.metadata)` in its Triton guide).
ULTRA = {
    "description": "Ultralytics YOLOv8n model",
    "author": "Ultralytics",
    "date": "2026-12-02T13:00:00",
    "version": "8.4.190",
    "license": "AGPL-3.0 License (https://ultralytics.com/license)",
    "docs": "https://docs.ultralytics.com",
    "stride": 32,
    "task": "detect",
    "batch": 1,
    "imgsz": [320, 320],
    "names": NAMES,
    "args": {"batch": 1, "half": False, "dynamic": True, "nms": False},
    "channels": 3,
}
DYNAMIC_IN = [("images", "FP32", [3, -1, -1])]
RAW_OUT = [("output0", "FP32", [4 + len(NAMES), -1])]


def test_the_dict_repr_of_ultralytics_guide_is_read() -> None:
    meta = parse_metadata_text(str(ULTRA), "m")
    assert meta.names[:4] == ("cat", "dog", "face", "hand") and len(meta.names) == 18
    assert (meta.imgsz, meta.stride, meta.task, meta.kpt_shape) == ((320, 320), 32, Task.DETECT, None)
    assert meta.is_ultralytics


def test_json_and_string_keys_are_read_too() -> None:
    text = json.dumps({**ULTRA, "names": {str(k): v for k, v in NAMES.items()}, "imgsz": 416})
    meta = parse_metadata_text(text, "m")
    assert meta.names[2] == "face" and meta.imgsz == (416, 416)


def test_onnx_metadata_props_values_are_strings() -> None:
    props = {k: str(v) for k, v in {**ULTRA, "task": "pose", "kpt_shape": [17, 3]}.items()}
    meta = metadata_from_mapping(props, "f.onnx")
    assert (meta.imgsz, meta.stride, meta.task, meta.kpt_shape) == ((320, 320), 32, Task.POSE, (17, 3))
    assert meta.names[3] == "hand"


def test_names_with_gaps_keep_their_ids() -> None:
    assert parse_metadata_text("{'names': {0: 'a', 2: 'c'}}", "m").names == ("a", "class 1", "c")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("__import__('os').system('true')", "neither JSON nor a Python literal"),
        ("{'names': ", "neither JSON nor a Python literal"),
        ("[1, 2]", "expected a dict"),
        ("{'imgsz': [0, 320]}", "imgsz"),
        ("{'names': {'x': 'a'}}", "key 'x' is not a class id"),
        ("{'task': 'depth'}", "the app decodes detect, segment, pose, classify, obb"),
        ("{'kpt_shape': [17, 5]}", "kpt_shape"),
    ],
)
def test_a_bad_metadata_names_the_model_and_the_cause(text: str, expected: str) -> None:
    meta, cfg = model(DYNAMIC_IN, RAW_OUT, 4, {"metadata": text})
    cfg["config"]["name"] = "yolo_export"
    with pytest.raises(ProfileError) as err:
        detect_profile(meta, cfg)
    assert "model yolo_export: config parameter metadata" in str(err.value)
    assert expected in str(err.value)


def test_no_metadata_is_none() -> None:
    assert config_metadata(model(DYNAMIC_IN, RAW_OUT, 4)[1]) is None
    assert config_metadata(model(DYNAMIC_IN, RAW_OUT, 4, {"metadata": "  "})[1]) is None


def test_an_ultralytics_export_is_fed_its_imgsz_and_named_by_its_metadata() -> None:
    p = detect_profile(*model(DYNAMIC_IN, RAW_OUT, 4, {"metadata": str(ULTRA)}))
    assert p.input_size == (320, 320) and p.input_size_source == SIZE_FROM_METADATA
    assert p.preprocess is Preprocess.LETTERBOX and p.pad_value == 114
    assert p.labels[:3] == ("cat", "dog", "face") and p.num_classes == 18
    # Ultralytics' own prediction defaults, and its pixels: images decoded in full.
    assert (p.score_threshold, p.iou_threshold, p.max_detections) == (0.25, 0.7, 300)
    assert p.full_decode and input_side_needed(p) is None


def test_without_metadata_a_dynamic_input_says_it_uses_a_default() -> None:
    p = detect_profile(*model(DYNAMIC_IN, RAW_OUT, 4))
    assert p.input_size == (640, 640) and p.input_size_source == SIZE_DEFAULT
    assert p.labels == () and (p.score_threshold, p.iou_threshold) == (0.25, 0.45)
    assert not p.full_decode and input_side_needed(p) == 640  # JPEGs decoded no bigger than that


def test_the_declared_shape_and_a_profile_win_over_imgsz() -> None:
    fixed = detect_profile(*model([("images", "FP32", [3, 640, 640])], RAW_OUT, 4, {"metadata": str(ULTRA)}))
    assert fixed.input_size == (640, 640) and fixed.input_size_source == SIZE_FROM_SHAPE
    told = detect_profile(
        *model(DYNAMIC_IN, RAW_OUT, 4, {"metadata": str(ULTRA)}), {"input_size": [256, 256]}
    )
    assert told.input_size == (256, 256) and told.input_size_source == SIZE_FROM_PROFILE
    later = apply_overrides(detect_profile(*model(DYNAMIC_IN, RAW_OUT, 4)), {"input_size": [480, 480]})
    assert later.input_size_source == SIZE_FROM_PROFILE


def test_config_parameters_win_over_the_metadata() -> None:
    params = {"metadata": str(ULTRA), "labels": "a,b", "iou_threshold": "0.5"}
    out = [("output0", "FP32", [6, -1])]
    p = detect_profile(*model(DYNAMIC_IN, out, 4, params))
    assert p.labels == ("a", "b") and p.iou_threshold == 0.5 and p.score_threshold == 0.25


def test_the_metadata_task_and_kpt_shape_decide_a_pose_export() -> None:
    pose = {**ULTRA, "task": "pose", "kpt_shape": [5, 3], "names": {0: "face"}}
    out = [("output0", "FP32", [4 + 1 + 15, -1])]
    p = detect_profile(*model(DYNAMIC_IN, out, 4, {"metadata": str(pose)}))
    assert p.task is Task.POSE and p.kpt_shape == (5, 3) and p.labels == ("face",)


def test_an_ultralytics_classifier_is_fed_its_classify_transforms() -> None:
    """Ultralytics' classify predictor resizes the shorter side and centre-crops (a stretch
    would change the scores); a classifier without such metadata keeps the plain resize."""
    cls = {**ULTRA, "task": "classify", "imgsz": [192, 192], "stride": 1}
    inputs, out = [("images", "FP32", [1, 3, 192, 192])], [("output0", "FP32", [1, len(NAMES)])]
    p = detect_profile(*model(inputs, out, 0, {"metadata": str(cls)}))
    assert (p.task, p.preprocess, p.input_size) == (Task.CLASSIFY, Preprocess.CENTER_CROP, (192, 192))
    assert p.scale == 1 / 255 and p.full_decode
    assert detect_profile(*model(inputs, out, 0)).preprocess is Preprocess.RESIZE
    overridden = detect_profile(*model(inputs, out, 0, {"metadata": str(cls)}), {"preprocess": "resize"})
    assert overridden.preprocess is Preprocess.RESIZE


def test_a_file_that_is_not_an_onnx_model_is_named(tmp_path) -> None:
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(b"\x08\x07\x12\x04abc")
    with pytest.raises(ProfileError) as err:
        onnx_file_metadata(bad)
    assert f"model file {bad}: cannot read it as an ONNX model" in str(err.value)
