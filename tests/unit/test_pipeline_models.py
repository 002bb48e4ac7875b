"""The bundled pipelines' configs as the app reads them (profile, stages), pipeline stages of
ensembles and BLS models, and MediaPipe's region geometry the pipelines share
(resources/model_repository/face_detector/1/mediapipe_rules.py, copied into each model
that uses it)."""

from __future__ import annotations

import importlib.util
import math
from types import ModuleType
from typing import Any

import cv2
import numpy as np
import pytest
from google.protobuf import json_format, text_format
from tritonclient.grpc import model_config_pb2

from app.inference.introspection.pipeline import Pipeline, Stage, pipeline_stages
from app.inference.profiles.profile import ProfileError, detect_profile
from app.inference.profiles.task_summary import task_summary
from app.resources import model_repository
from tests.unit.test_profile import EFFNMS_OUT, model


def bundled_config(name: str) -> dict[str, Any]:
    """A bundled model's config.pbtxt as the server's JSON (tritonclient's as_json)."""
    message = text_format.Parse(
        (model_repository() / name / "config.pbtxt").read_text(), model_config_pb2.ModelConfig()
    )
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def regions() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mediapipe_rules", model_repository() / "face_detector" / "1" / "mediapipe_rules.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the bundled configs --------------------------------------------------------------------------
def test_face_mesh_config_reads_as_a_468_point_mesh_drawn_as_lines() -> None:
    config = bundled_config("face_mesh")
    p = detect_profile({}, config)
    assert (p.task, p.output_format, p.kpt_shape, p.labels) == ("pose", "efficientnms", (468, 3), ("face",))
    assert p.preprocess == "raw" and p.boxes_in == "original" and p.max_input_side is None
    assert p.keypoint_style == "lines" and "lines only" in task_summary(p)
    # MediaPipe's FACEMESH_CONTOURS: 40 lips, 2 x 16 eyes, 2 x 8 brows, 36 face oval.
    assert len(p.skeleton) == len(set(p.skeleton)) == 124
    assert all(0 <= a < 468 and 0 <= b < 468 for a, b in p.skeleton)
    assert pipeline_stages(config) == Pipeline("bls", (Stage("face_detector"), Stage("face_landmark")))


def test_person_pose_config_reads_as_blazepose() -> None:
    config = bundled_config("person_pose")
    p = detect_profile({}, config)
    assert (p.task, p.kpt_shape, p.labels, p.keypoint_style) == ("pose", (33, 3), ("person",), "dots")
    assert p.keypoint_names[0] == "nose" and p.keypoint_names[32] == "right foot index"
    assert len(p.skeleton) == 35 and (11, 12) in p.skeleton and (23, 25) in p.skeleton
    stages = pipeline_stages(config)
    assert stages is not None and stages.names() == ("pose_detector", "pose_landmark")


def test_stages_are_single_models() -> None:
    for name in ("face_detector", "face_landmark", "pose_detector", "pose_landmark"):
        assert pipeline_stages(bundled_config(name)) is None


# -- pipeline stages ------------------------------------------------------------------------------
def test_ensemble_steps_are_the_stages() -> None:
    config = {
        "config": {
            "name": "ens",
            "platform": "ensemble",
            "ensemble_scheduling": {
                "step": [
                    {"model_name": "pre", "model_version": "-1", "input_map": {"a": "b"}},
                    {"model_name": "net", "model_version": "3"},
                    {"model_name": "post"},
                ]
            },
        }
    }
    pipeline = pipeline_stages(config)
    assert pipeline == Pipeline("ensemble", (Stage("pre"), Stage("net", "3"), Stage("post")))


def test_composing_models_parameter_names_a_bls_models_stages() -> None:
    config = {"parameters": {"composing_models": {"string_value": " det ,\nland, det"}}}
    stages = pipeline_stages(config)
    assert stages == Pipeline("bls", (Stage("det"), Stage("land"), Stage("det")))
    assert stages.names() == ("det", "land")
    assert pipeline_stages({"parameters": {"composing_models": {"string_value": " , "}}}) is None


def test_keypoint_style_parameter_is_checked() -> None:
    outs = [*EFFNMS_OUT, ("det_keypoints", "FP32", [100, 6, 3])]
    raw = [("image", "UINT8", [-1, -1, 3])]
    assert detect_profile(*model(raw, outs, 8, {"keypoint_style": "Lines"})).keypoint_style == "lines"
    assert detect_profile(*model(raw, outs, 8)).keypoint_style == "dots"
    with pytest.raises(ProfileError, match="keypoint_style = 'dotted'"):
        detect_profile(*model(raw, outs, 8, {"keypoint_style": "dotted"}))
    with pytest.raises(ProfileError, match="keypoint_style"):
        detect_profile(*model(raw, outs, 8), {"keypoint_style": "none"})


# -- region geometry --------------------------------------------------------------------------------
def test_eyes_level_and_upright_bodies_need_no_rotation() -> None:
    r = regions()
    face = r.region_from_box(np.array([10, 20, 50, 80]), np.array([20, 40]), np.array([40, 40]), 0.0)
    assert (face.cx, face.cy, face.width, face.height, face.rotation) == (30, 50, 40, 60, 0)
    assert r.square_long(face, 1.5)[2:4] == (90, 90)
    # The right eye lower than the left one (head tilted): rotated by that angle.
    tilted = r.region_from_box(np.array([0, 0, 10, 10]), np.array([0, 10]), np.array([10, 0]), 0.0)
    assert tilted.rotation == pytest.approx(-math.pi / 4)
    # A standing body: the scale point straight above the hips.
    body = r.region_from_alignment(np.array([100, 200]), np.array([100, 80]))
    assert (body.cx, body.cy, body.width, body.rotation) == (100, 200, 240, 0)
    lying = r.region_from_alignment(np.array([100, 200]), np.array([220, 200]))
    assert lying.rotation == pytest.approx(math.pi / 2)


@pytest.mark.parametrize("degrees", [0, 30, -100, 180])
def test_crop_and_projection_are_inverse(degrees: float) -> None:
    """A dot drawn in the image is found in the crop where the projection says it is."""
    r = regions()
    image = np.zeros((300, 400, 3), np.uint8)
    cv2.circle(image, (230, 120), 3, (255, 255, 255), -1)
    region = r.Region(200.0, 150.0, 160.0, 160.0, math.radians(degrees))
    crop = r.crop(image, region, 128)
    row, col = np.unravel_index(
        np.argmax(cv2.GaussianBlur(crop[:, :, 0].astype(np.float32), (7, 7), 0)), crop.shape[:2]
    )
    back = r.project(np.array([[col + 0.5, row + 0.5]]), region, 128)[0]
    assert np.hypot(*(back - [230.5, 120.5])) < 2.0, (degrees, back)


def test_whole_image_region_is_the_centred_letterbox() -> None:
    r = regions()
    region = r.whole_image(640, 480)
    assert (region.cx, region.cy, region.width, region.height) == (320, 240, 640, 640)
    image = np.full((480, 640, 3), 200, np.uint8)
    tensor = r.crop(image, region, 128, replicate_border=False)
    assert tensor[:10].max() == 0 and tensor[-10:].max() == 0 and tensor[20:108].min() == 200
    assert r.project(np.array([[0.0, 16.0], [128.0, 112.0]]), region, 128) == pytest.approx(
        np.array([[0, 0], [640, 480]])
    )
