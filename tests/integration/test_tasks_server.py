"""Keypoints, instance masks, semantic maps and classes against a real Triton: the fixed test
models of tests/models/README.md give known outputs, checked here in pixels of the original
image on three aspect ratios; expectations are written out independently of app/inference."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from app.inference.masks import decode_rle
from app.inference.profiles.profile import (
    DecodedOutputs,
    apply_overrides,
    decode_outputs,
    detect_profile,
    preprocess,
)

pytestmark = pytest.mark.slow

SIZES = [(480, 640), (1080, 1920), (700, 300)]  # (h, w)


@pytest.fixture(scope="module")
def client(test_server):
    c = grpcclient.InferenceServerClient(test_server.grpc_url)
    yield c
    c.close()


def _profile(client, name: str, **overrides):
    profile = detect_profile(
        client.get_model_metadata(name, as_json=True), client.get_model_config(name, as_json=True)
    )
    return apply_overrides(profile, overrides) if overrides else profile


def _run(client, name: str, image: np.ndarray, profile=None) -> DecodedOutputs:
    profile = profile or _profile(client, name)
    tensor, transform = preprocess(image, profile)
    inp = grpcclient.InferInput(profile.input_name, list(tensor.shape), profile.input_dtype)
    inp.set_data_from_numpy(tensor)
    outputs = [grpcclient.InferRequestedOutput(n) for n in profile.output_names]
    result = client.infer(name, [inp], outputs=outputs)
    return decode_outputs({n: result.as_numpy(n) for n in profile.output_names}, profile, transform)


def _letterbox_geometry(h: int, w: int) -> tuple[float, int, int]:
    """Ultralytics letterbox into 640x640, written out independently: (r, left, top)."""
    r = min(640 / h, 640 / w)
    return r, round((640 - round(w * r)) / 2 - 0.1), round((640 - round(h * r)) / 2 - 0.1)


def _unletterbox_point(x: float, y: float, h: int, w: int) -> tuple[float, float]:
    r, left, top = _letterbox_geometry(h, w)
    return min(max((x - left) / r, 0), w), min(max((y - top) / r, 0), h)


def _input_coords(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Model-input (640x640 letterbox) coordinates of every original pixel's centre."""
    r, left, top = _letterbox_geometry(h, w)
    return (np.arange(w) + 0.5) * r + left, (np.arange(h) + 0.5) * r + top


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


# -- pose ----------------------------------------------------------------------------------
def _pose_expected() -> list[tuple[list[float], float, list[tuple[float, float, float]]]]:
    """Input-pixel box, score, keypoints of the two detections fixed_pose keeps after NMS."""
    first = [(110.0 + 10 * j, 155.0 + 10 * j, 0.9 if j % 2 == 0 else 0.2) for j in range(17)]
    first[16] = (150.0, 20.0, 0.9)
    second = [(410.0 + 10 * j, 210.0 + 15 * j, 0.95) for j in range(17)]
    return [([100, 150, 300, 350], 0.9, first), ([400, 200, 600, 500], 0.8, second)]


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_pose_keypoints_in_original_pixels(client, h: int, w: int) -> None:
    profile = _profile(client, "fixed_pose")
    assert (profile.task, profile.kpt_shape, profile.labels) == ("pose", (17, 3), ("person",))
    image = np.random.default_rng(1).integers(0, 256, (h, w, 3), dtype=np.uint8)
    dets = _run(client, "fixed_pose", image, profile).detections
    expected = _pose_expected()
    assert len(dets) == len(expected), dets
    for det, (box, score, kpts) in zip(dets, expected, strict=True):
        x1, y1 = _unletterbox_point(box[0], box[1], h, w)
        x2, y2 = _unletterbox_point(box[2], box[3], h, w)
        assert np.allclose(det.box, (x1, y1, x2, y2), atol=1.0)
        assert det.score == pytest.approx(score, abs=1e-4) and det.label == "person"
        assert det.keypoints is not None and len(det.keypoints) == 17
        for (x, y, s), (ex, ey, es) in zip(det.keypoints, kpts, strict=True):
            ox, oy = _unletterbox_point(ex, ey, h, w)
            assert abs(x - ox) <= 1.0 and abs(y - oy) <= 1.0, ((x, y), (ox, oy))
            assert s == pytest.approx(es, abs=1e-4)
        record = det.to_record()
        assert len(record["keypoints"]) == 17 and len(record["keypoints"][0]) == 3


# -- instance segmentation --------------------------------------------------------------------
def _segment_expected(h: int, w: int) -> list[tuple[str, float, np.ndarray]]:
    """Label, score and the expected mask of each fixed_segment detection: pixel centres
    inside the prototype's shape (input pixels) and inside the detection's box."""
    xs, ys = _input_coords(h, w)
    x, y = np.meshgrid(xs, ys)
    disk = np.hypot(x - 230, y - 250) < 90
    rect = (x > 380) & (x < 560) & (y > 260) & (y < 460)
    out = []
    for label, score, shape, box in (
        ("disk", 0.9, disk, (100, 150, 300, 350)),
        ("square", 0.8, rect, (400, 200, 600, 500)),
    ):
        inside = (x >= box[0]) & (x < box[2]) & (y >= box[1]) & (y < box[3])
        out.append((label, score, shape & inside))
    return out


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_instance_masks_in_original_pixels(client, h: int, w: int) -> None:
    profile = _profile(client, "fixed_segment")
    assert (profile.task, profile.output_names) == ("segment", ("output0", "output1"))
    image = np.random.default_rng(2).integers(0, 256, (h, w, 3), dtype=np.uint8)
    dets = _run(client, "fixed_segment", image, profile).detections
    expected = _segment_expected(h, w)
    assert [d.label for d in dets] == [e[0] for e in expected]
    for det, (label, score, want) in zip(dets, expected, strict=True):
        assert det.score == pytest.approx(score, abs=1e-4)
        assert det.mask is not None and det.mask.size == (h, w)
        got = det.mask.full()
        assert _iou(got, want) > 0.98, (label, w, h, _iou(got, want))
        # The record's RLE is what pycocotools decodes back to the same pixels.
        record = det.to_record()
        assert record["mask"]["size"] == [h, w] and isinstance(record["mask"]["counts"], str)
        assert np.array_equal(decode_rle(record["mask"]), got)
        assert record["area"] == int(got.sum())


def test_a_wrong_letterbox_gives_wrong_masks(client) -> None:
    """The check above is sharp: stretching instead of letterboxing moves the masks."""
    h, w = 480, 640
    profile = _profile(client, "fixed_segment", preprocess="resize")
    image = np.zeros((h, w, 3), np.uint8)
    dets = _run(client, "fixed_segment", image, profile).detections
    assert dets[0].mask is not None
    assert _iou(dets[0].mask.full(), _segment_expected(h, w)[0][2]) < 0.9


# -- semantic segmentation ------------------------------------------------------------------
def _semantic_expected(h: int, w: int) -> dict[str, np.ndarray]:
    """The 480x640 input is a plain resize; each original pixel's centre falls in one 4x4 cell."""
    j = np.floor((np.arange(w) + 0.5) * 640 / w / 4)
    i = np.floor((np.arange(h) + 0.5) * 480 / h / 4)
    jj, ii = np.meshgrid(j, i)
    car = (jj + 0.5 - 100) ** 2 + (ii + 0.5 - 80) ** 2 < 400
    return {"sky": ii < 40, "road": (ii >= 90) & ~car, "car": car}


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_semantic_masks_in_original_pixels(client, h: int, w: int) -> None:
    profile = _profile(client, "fixed_semantic")
    assert (profile.task, profile.map_layout, profile.preprocess) == ("semantic", "CHW", "resize")
    image = np.random.default_rng(3).integers(0, 256, (h, w, 3), dtype=np.uint8)
    decoded = _run(client, "fixed_semantic", image, profile)
    assert decoded.detections == [] and decoded.masks is not None
    got = {m.label: m for m in decoded.masks}
    assert sorted(got) == ["car", "road", "sky"]  # "background" is not reported
    for label, want in _semantic_expected(h, w).items():
        mask = got[label].mask
        assert mask.size == (h, w)
        assert _iou(mask.full(), want) > 0.98, (label, w, h)
        assert got[label].to_record()["area"] == mask.area == int(mask.full().sum())
    assert [m.class_id for m in decoded.masks] == [1, 2, 3]


def test_reading_the_map_channels_last_is_rejected_or_wrong(client) -> None:
    profile = _profile(client, "fixed_semantic", map_layout="HWC")
    image = np.zeros((480, 640, 3), np.uint8)
    try:
        decoded = _run(client, "fixed_semantic", image, profile)
    except ValueError:
        return
    got = {m.label: m.mask.full() for m in decoded.masks or []}
    assert "sky" not in got or _iou(got["sky"], _semantic_expected(480, 640)["sky"]) < 0.5


# -- classification ------------------------------------------------------------------------------
def _softmax(x: list[float]) -> np.ndarray:
    e = np.exp(np.asarray(x) - max(x))
    return e / e.sum()


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_top_classes_with_softmax(client, h: int, w: int) -> None:
    profile = _profile(client, "fixed_classify")
    assert (profile.task, profile.logits, profile.top_k) == ("classify", True, 5)
    image = np.empty((h, w, 3), np.uint8)
    image[:] = (200, 100, 50)  # RGB
    decoded = _run(client, "fixed_classify", image, profile)
    logits = [2000 / 255, 1000 / 255, 500 / 255, 3.0, 1.0, -2.0]
    probs = _softmax(logits)
    names = ["red", "green", "blue", "three", "one", "minus two"]
    order = np.argsort(-probs)[:5]
    assert decoded.classes is not None
    assert [c.label for c in decoded.classes] == [names[i] for i in order]
    assert [c.class_id for c in decoded.classes] == [int(i) for i in order]
    for c, i in zip(decoded.classes, order, strict=True):
        assert c.score == pytest.approx(probs[i], abs=1e-3)


def test_bgr_instead_of_rgb_changes_the_top_class(client) -> None:
    image = np.empty((100, 100, 3), np.uint8)
    image[:] = (200, 100, 50)
    decoded = _run(client, "fixed_classify", image, _profile(client, "fixed_classify", channel_order="BGR"))
    assert decoded.classes is not None and decoded.classes[0].label == "blue"
