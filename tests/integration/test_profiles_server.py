"""Profiles against a real Triton: detect from the served metadata/config, preprocess, infer,
postprocess, and compare with the boxes the fixed test models (tests/models/README.md) imply."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from app.inference.profiles.profile import detect_profile, postprocess, preprocess

pytestmark = pytest.mark.slow

SIZES = [(480, 640), (1080, 1920), (700, 300)]  # (h, w)
INPUT_BOXES = [[100, 150, 300, 350], [400, 200, 600, 500]]  # model-input pixels, 640x640


def _unletterbox(box: list[float], h: int, w: int) -> list[float]:
    """Inverse Ultralytics letterbox, written out independently of app.inference.decoding.letterbox."""
    r = min(640 / h, 640 / w)
    left = round((640 - round(w * r)) / 2 - 0.1)
    top = round((640 - round(h * r)) / 2 - 0.1)
    x1, y1, x2, y2 = box
    return [
        min(max((x1 - left) / r, 0), w),
        min(max((y1 - top) / r, 0), h),
        min(max((x2 - left) / r, 0), w),
        min(max((y2 - top) / r, 0), h),
    ]


def _expected(name: str, h: int, w: int) -> list[tuple[list[float], float, int, str]]:
    if name == "fixed_efficientnms":
        a, b = (_unletterbox(bx, h, w) for bx in INPUT_BOXES)
        return [(a, 0.9, 0, "class 0"), (b, 0.8, 2, "class 2")]
    if name == "fixed_tfod":
        return [
            ([0.2 * w, 0.1 * h, 0.6 * w, 0.5 * h], 0.95, 1, "class 1"),
            ([0.5 * w, 0.25 * h, 1.0 * w, 0.75 * h], 0.7, 3, "class 3"),
        ]
    if name == "fixed_yolov5":
        a, b = (_unletterbox(bx, h, w) for bx in INPUT_BOXES)
        return [(a, 0.875, 0, "person"), (b, 0.75, 2, "car")]
    a, b = (_unletterbox(bx, h, w) for bx in INPUT_BOXES)
    return [(a, 0.9, 0, "person"), (b, 0.8, 2, "car")]


@pytest.fixture(scope="module")
def client(test_server):
    c = grpcclient.InferenceServerClient(test_server.grpc_url)
    yield c
    c.close()


@pytest.mark.parametrize("name", ["fixed_efficientnms", "fixed_tfod", "fixed_yolov5", "fixed_yolov8"])
def test_fixed_model_boxes_in_original_pixels(client, name: str) -> None:
    assert client.is_model_ready(name), f"{name} is not ready on the test server"
    metadata = client.get_model_metadata(name, as_json=True)
    config = client.get_model_config(name, as_json=True)
    profile = detect_profile(metadata, config)
    rng = np.random.default_rng(0)
    for h, w in SIZES:
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        tensor, transform = preprocess(image, profile)
        inp = grpcclient.InferInput(profile.input_name, list(tensor.shape), profile.input_dtype)
        inp.set_data_from_numpy(tensor)
        outputs = [grpcclient.InferRequestedOutput(n) for n in profile.output_names]
        result = client.infer(name, [inp], outputs=outputs)
        arrays = {n: result.as_numpy(n) for n in profile.output_names}
        dets = postprocess(arrays, profile, transform)
        expected = _expected(name, h, w)
        assert len(dets) == len(expected), f"{name} {w}x{h}: {dets}"
        for det, (box, score, class_id, label) in zip(dets, expected, strict=True):
            assert np.allclose(det.box, box, atol=1.0), f"{name} {w}x{h}: {det.box} != {box}"
            assert det.score == pytest.approx(score, abs=1e-3)
            assert (det.class_id, det.label) == (class_id, label)


def test_profiles_detected_from_served_models(client) -> None:
    def prof(name: str):
        return detect_profile(
            client.get_model_metadata(name, as_json=True), client.get_model_config(name, as_json=True)
        )

    effnms, tfod, v5, v8 = (
        prof(n) for n in ("fixed_efficientnms", "fixed_tfod", "fixed_yolov5", "fixed_yolov8")
    )
    assert (effnms.output_format, effnms.has_batch_dim, effnms.preprocess) == (
        "efficientnms",
        True,
        "letterbox",
    )
    assert (tfod.output_format, tfod.input_dtype, tfod.preprocess, tfod.has_batch_dim) == (
        "tfod",
        "UINT8",
        "raw",
        True,
    )
    assert (v5.output_format, v5.input_dtype, v5.has_batch_dim) == ("yolov5", "FP16", True)
    assert (v8.output_format, v8.input_layout, v8.num_classes) == ("yolov8", "NCHW", 80)
    face = prof("face_detector")
    assert (face.output_format, face.preprocess, face.boxes_in, face.labels) == (
        "efficientnms", "raw", "original", ("face",),
    )  # fmt: skip
