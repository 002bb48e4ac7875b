"""Profile detection from Triton metadata/config dicts, profile files, pre/post-processing."""

from pathlib import Path

import numpy as np
import pytest

from app.inference.decoding.labels import COCO_NAMES
from app.inference.decoding.letterbox import IdentityTransform, LetterboxTransform, ResizeTransform
from app.inference.profile_kinds import BoxesIn, OutputFormat, Preprocess, Task
from app.inference.profiles.postprocess import DETECTION_DECODERS
from app.inference.profiles.profile import (
    ModelProfile,
    ProfileError,
    apply_overrides,
    detect_profile,
    load_profile_file,
    postprocess,
    preprocess,
)
from app.inference.profiles.profile_types import TASK_FORMATS


def _t(name: str, dtype: str, shape: list[int]) -> dict:
    return {"name": name, "datatype": dtype, "shape": [str(d) for d in shape]}


def _c(name: str, dtype: str, dims: list[int], **extra) -> dict:
    return {"name": name, "data_type": f"TYPE_{dtype}", "dims": [str(d) for d in dims], **extra}


def model(inputs, outputs, max_batch_size=0, parameters=None, wrap=True):
    """(metadata, config) as tritonclient.grpc gives them with as_json=True: int64 as strings,
    max_batch_size left out when 0, metadata shapes with the batch dim (-1) included."""
    lead = [-1] if max_batch_size else []
    meta = {
        "name": "m",
        "versions": ["1"],
        "platform": "python",
        "inputs": [_t(n, d, lead + s) for n, d, s in inputs],
        "outputs": [_t(n, d, lead + s) for n, d, s in outputs],
    }
    cfg: dict = {"name": "m", "backend": "python"}
    if max_batch_size:
        cfg["max_batch_size"] = max_batch_size
    cfg["input"] = [_c(n, d, s) for n, d, s in inputs]
    cfg["output"] = [_c(n, d, s) for n, d, s in outputs]
    if parameters:
        cfg["parameters"] = {k: {"string_value": v} for k, v in parameters.items()}
    return meta, ({"config": cfg} if wrap else cfg)


EFFNMS_OUT = [
    ("num_dets", "INT32", [1]),
    ("det_boxes", "FP32", [100, 4]),
    ("det_scores", "FP32", [100]),
    ("det_classes", "INT32", [100]),
]
TFOD_OUT = [
    ("detection_boxes", "FP32", [1, 100, 4]),
    ("detection_classes", "FP32", [1, 100]),
    ("detection_scores", "FP32", [1, 100]),
    ("num_detections", "FP32", [1]),
    ("raw_detection_scores", "FP32", [1, 1917, 91]),
]


def test_yolov8_batched_fp32_nchw() -> None:
    p = detect_profile(*model([("images", "FP32", [3, 640, 640])], [("output0", "FP32", [84, 8400])], 4))
    assert (p.input_name, p.input_layout, p.input_dtype, p.input_size) == (
        "images",
        "NCHW",
        "FP32",
        (640, 640),
    )
    assert p.has_batch_dim and p.preprocess == "letterbox" and p.pad_value == 114
    assert p.scale == pytest.approx(1 / 255) and p.channel_order == "RGB"
    assert (p.output_format, p.output_names, p.boxes_in, p.num_classes) == (
        "yolov8",
        ("output0",),
        "input",
        80,
    )
    assert p.labels == COCO_NAMES


def test_yolov5_explicit_batch_fp16() -> None:
    p = detect_profile(
        *model([("images", "FP16", [1, 3, 640, 640])], [("output0", "FP16", [1, 25200, 85])], wrap=False)
    )
    assert p.has_batch_dim and p.input_dtype == "FP16" and p.input_size == (640, 640)
    assert (p.output_format, p.num_classes, p.labels) == ("yolov5", 80, COCO_NAMES)


def test_transposed_yolov8_told_apart_from_yolov5_by_anchor_count() -> None:
    # 3 classes: 7 values per row could be YOLOv5 (5 + 2) or YOLOv8 (4 + 3).
    v8 = detect_profile(*model([("x", "FP32", [3, 640, 640])], [("y", "FP32", [8400, 7])], 1))
    assert (v8.output_format, v8.num_classes, v8.labels) == ("yolov8", 3, ())
    v5 = detect_profile(*model([("x", "FP32", [3, 640, 640])], [("y", "FP32", [25200, 7])], 1))
    assert (v5.output_format, v5.num_classes) == ("yolov5", 2)
    # The config's labels decide when the anchor count cannot.
    lab = detect_profile(
        *model([("x", "FP32", [3, 320, 320])], [("y", "FP32", [-1, 7])], 1, {"labels": "a,b,c"})
    )
    assert (lab.output_format, lab.num_classes, lab.labels) == ("yolov8", 3, ("a", "b", "c"))


def test_efficientnms_nhwc_dynamic_fp32_gets_default_size() -> None:
    p = detect_profile(*model([("input", "FP32", [-1, -1, 3])], EFFNMS_OUT, 8))
    assert p.input_layout == "NHWC" and p.input_size == (640, 640) and p.preprocess == "letterbox"
    assert p.output_names == ("num_dets", "det_boxes", "det_scores", "det_classes")
    assert p.boxes_in == "input" and p.labels == ()


def test_face_detector_raw_uint8_boxes_in_original_pixels() -> None:
    params = {"labels": "face", "score_threshold": "0.5", "iou_threshold": "0.3"}
    p = detect_profile(*model([("image", "UINT8", [-1, -1, 3])], EFFNMS_OUT, 8, params))
    assert (p.input_layout, p.input_dtype, p.input_size, p.has_batch_dim) == ("NHWC", "UINT8", None, True)
    assert (p.preprocess, p.boxes_in, p.labels) == ("raw", "original", ("face",))
    assert (p.score_threshold, p.iou_threshold) == (0.5, 0.3)


def test_tfod_uint8_explicit_batch_raw() -> None:
    p = detect_profile(*model([("input_tensor", "UINT8", [1, -1, -1, 3])], TFOD_OUT))
    assert (p.input_layout, p.has_batch_dim, p.preprocess, p.boxes_in) == ("NHWC", True, "raw", "normalized")
    assert p.output_format == "tfod"
    assert p.output_names == ("num_detections", "detection_boxes", "detection_scores", "detection_classes")


def test_tfod_fixed_size_uint8_is_stretch_resized() -> None:
    p = detect_profile(*model([("input_tensor", "UINT8", [1, 320, 320, 3])], TFOD_OUT))
    assert (p.preprocess, p.input_size, p.scale, p.pad_value) == ("resize", (320, 320), 1.0, 0)


def test_no_batch_dim_chw() -> None:
    p = detect_profile(*model([("images", "FP32", [3, 416, 416])], [("output0", "FP32", [84, 3549])]))
    assert not p.has_batch_dim and p.input_size == (416, 416)


def test_unknown_outputs_error_lists_them_and_suggests_profile() -> None:
    meta, cfg = model(
        [("images", "FP32", [3, 640, 640])], [("logits", "FP32", [1000]), ("feat", "FP16", [7])]
    )
    with pytest.raises(ProfileError, match=r"logits FP32 \[1000\].*feat FP16 \[7\].*--profile FILE"):
        detect_profile(meta, cfg)
    p = detect_profile(meta, cfg, {"output_format": "yolov8", "output_names": ["logits"]})
    assert p.output_names == ("logits",)


def test_unsupported_input_errors() -> None:
    with pytest.raises(ProfileError, match="INT64 not supported"):
        detect_profile(*model([("ids", "INT64", [3, 4, 5])], EFFNMS_OUT))
    with pytest.raises(ProfileError, match="3-channel"):
        detect_profile(*model([("x", "FP32", [5, 64, 64])], EFFNMS_OUT))
    with pytest.raises(ProfileError, match="which input"):
        detect_profile(*model([("a", "FP32", [3, 64, 64]), ("b", "FP32", [3, 64, 64])], EFFNMS_OUT))


PROFILE_TOML = """
labels_file = "names.txt"
[input]
name = "data"
layout = "nhwc"
dtype = "FP16"
size = [320, 480]
batch = false
preprocess = "resize"
scale = 1.0
mean = [0.5, 0.5, 0.5]
std = [2.0, 2.0, 2.0]
channel_order = "BGR"
[output]
format = "yolov8"
names = ["out"]
num_classes = 2
[postprocess]
score_threshold = 0.5
iou_threshold = 0.6
max_detections = 10
"""


def test_profile_file_round_trip(tmp_path: Path) -> None:
    (tmp_path / "names.txt").write_text("cat\ndog\n")
    f = tmp_path / "m.toml"
    f.write_text(PROFILE_TOML)
    over = load_profile_file(f)
    base = detect_profile(*model([("images", "FP32", [3, 640, 640])], [("output0", "FP32", [84, 8400])], 4))
    p = apply_overrides(base, over)
    assert (p.input_name, p.input_layout, p.input_dtype, p.input_size) == ("data", "NHWC", "FP16", (320, 480))
    assert (p.has_batch_dim, p.preprocess, p.channel_order) == (False, "resize", "BGR")
    assert (p.mean, p.std, p.scale) == ((0.5, 0.5, 0.5), (2.0, 2.0, 2.0), 1.0)
    assert (p.output_names, p.num_classes, p.labels) == (("out",), 2, ("cat", "dog"))
    assert (p.score_threshold, p.iou_threshold, p.max_detections) == (0.5, 0.6, 10)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("[input]\nsiez = [1, 2]\n", r"m\.toml: unknown key 'siez' in \[input\]"),
        ("colour = 1\n", r"m\.toml: unknown key 'colour'"),
        (
            "[postprocess]\nmax_detections = 'many'\n",
            r"m\.toml: max_detections = 'many': expected an integer",
        ),
        ("[input]\nsize = [640]\n", r"m\.toml: input_size .*expected \[H, W\]"),
        ("[input\n", r"m\.toml: not valid TOML"),
    ],
)
def test_profile_file_errors_name_key_and_file(tmp_path: Path, text: str, pattern: str) -> None:
    f = tmp_path / "m.toml"
    f.write_text(text)
    with pytest.raises(ProfileError, match=pattern):
        load_profile_file(f)


def test_profile_files_spell_the_kinds_which_become_enums(tmp_path: Path) -> None:
    f = tmp_path / "pose.toml"
    f.write_text('task = "Pose"\nkpt_shape = [17, 3]\n[input]\npreprocess = "RESIZE"\n')
    over = load_profile_file(f)
    assert over["task"] is Task.POSE and over["preprocess"] is Preprocess.RESIZE
    base = detect_profile(*model([("images", "FP32", [3, 640, 640])], [("output0", "FP32", [56, 8400])], 1))
    p = apply_overrides(base, {**over, "boxes_in": "original"})  # a dict of strings: parsed too
    assert p.task is Task.POSE and p.output_format is OutputFormat.YOLOV8
    assert p.preprocess is Preprocess.RESIZE and p.boxes_in is BoxesIn.ORIGINAL
    # A kind the app does not know: the file and the values it knows.
    f.write_text('[output]\nformat = "ssd"\n')
    with pytest.raises(
        ProfileError, match=r"pose\.toml: output_format must be one of efficientnms, tfod, .*got 'ssd'"
    ):
        load_profile_file(f)


def test_every_detection_format_has_a_decoder() -> None:
    detection = {f for task in (Task.DETECT, Task.POSE, Task.SEGMENT) for f in TASK_FORMATS[task]}
    assert set(DETECTION_DECODERS) == detection


def test_invalid_override_values() -> None:
    base = detect_profile(*model([("images", "FP32", [3, 640, 640])], [("output0", "FP32", [84, 8400])], 4))
    with pytest.raises(ProfileError, match="output_format must be one of"):
        apply_overrides(base, {"output_format": "ssd"})
    with pytest.raises(ProfileError, match="unknown key 'nope'"):
        apply_overrides(base, {"nope": 1})
    with pytest.raises(ProfileError, match="reads 4 output"):
        apply_overrides(base, {"output_format": "efficientnms"})


def _profile(**kw) -> ModelProfile:
    base = dict(
        input_name="images",
        input_layout="NCHW",
        input_dtype="FP32",
        input_size=(640, 640),
        has_batch_dim=True,
        preprocess="letterbox",
        output_format="yolov8",
        output_names=("output0",),
    )
    return ModelProfile(**{**base, **kw})


def test_preprocess_nchw_fp32_letterbox() -> None:
    img = np.zeros((480, 640, 3), np.uint8)
    img[..., 0] = 255  # red
    tensor, t = preprocess(img, _profile())
    assert tensor.shape == (1, 3, 640, 640) and tensor.dtype == np.float32 and tensor.flags["C_CONTIGUOUS"]
    assert isinstance(t, LetterboxTransform) and t.pad_top == 80
    assert tensor[0, :, 320, 320].tolist() == [1.0, 0.0, 0.0]  # image: red, scaled by 1/255
    assert tensor[0, :, 0, 0].tolist() == pytest.approx([114 / 255] * 3)  # padding


def test_preprocess_nhwc_fp16_bgr_mean_std_no_batch() -> None:
    img = np.zeros((10, 20, 3), np.uint8)
    img[..., 0] = 255
    p = _profile(
        input_layout="NHWC", input_dtype="FP16", input_size=(10, 20), has_batch_dim=False,
        preprocess="resize", channel_order="BGR", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5),
    )  # fmt: skip
    tensor, t = preprocess(img, p)
    assert tensor.shape == (10, 20, 3) and tensor.dtype == np.float16 and isinstance(t, ResizeTransform)
    assert tensor[0, 0].tolist() == [-1.0, -1.0, 1.0]  # B, G, R = (0 - .5)/.5, ..., (1 - .5)/.5


def test_preprocess_raw_uint8() -> None:
    p = _profile(input_layout="NHWC", input_dtype="UINT8", input_size=None, preprocess="raw")
    img = np.arange(7 * 5 * 3, dtype=np.uint8).reshape(7, 5, 3)
    tensor, t = preprocess(img, p)
    assert tensor.shape == (1, 7, 5, 3) and tensor.dtype == np.uint8 and (tensor[0] == img).all()
    assert isinstance(t, IdentityTransform)
    with pytest.raises(ValueError, match="RGB uint8 HxWx3"):
        preprocess(np.zeros((7, 5), np.uint8), p)


def test_postprocess_yolov8_maps_to_original_and_names_coco() -> None:
    img = np.zeros((1080, 1920, 3), np.uint8)
    p = _profile()
    _, t = preprocess(img, p)
    r = 640 / 1920
    top = round((640 - round(1080 * r)) / 2 - 0.1)
    out = np.zeros((1, 84, 8400), np.float32)
    out[0, :4, 5] = (200, 250, 200, 200)  # input box 100,150,300,350
    out[0, 4 + 2, 5] = 0.9
    out[0, :4, 6] = (320, 10, 40, 20)  # entirely in the top padding: not a detection
    out[0, 4 + 1, 6] = 0.95
    dets = postprocess({"output0": out}, p, t)
    assert len(dets) == 1 and dets[0].label == "car" and dets[0].class_id == 2
    expected = [100 / r, (150 - top) / r, 300 / r, (350 - top) / r]
    assert np.allclose(dets[0].box, expected, atol=1e-2)
    assert postprocess({"output0": out}, p, t, score_threshold=0.95) == []


def test_postprocess_boxes_in_original_and_missing_output() -> None:
    p = _profile(
        input_layout="NHWC", input_dtype="UINT8", input_size=None, preprocess="raw",
        output_format="efficientnms", output_names=("n", "b", "s", "c"), boxes_in="original",
        labels=("face",),
    )  # fmt: skip
    _, t = preprocess(np.zeros((100, 200, 3), np.uint8), p)
    outs = {
        "n": np.array([[1]]),
        "b": np.array([[[10, 20, 250, 90]]], np.float32),
        "s": np.array([[0.8]], np.float32),
        "c": np.array([[0]]),
    }
    dets = postprocess(outs, p, t)
    assert [(d.box, d.label) for d in dets] == [((10, 20, 200, 90), "face")]
    with pytest.raises(ProfileError, match=r"\['c'\] missing"):
        postprocess({k: v for k, v in outs.items() if k != "c"}, p, t)


def test_a_1_255_scale_divides_as_the_exporters_do() -> None:
    # Ultralytics' `im /= 255` (and torchvision's div(255)): x * float32(1/255) would be an ulp
    # off for half the grey levels.
    grey = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    profile = _profile(input_size=(16, 16), preprocess=Preprocess.RESIZE, scale=1 / 255)
    tensor, _ = preprocess(grey, profile)
    expected = grey.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    assert np.array_equal(tensor[0], expected)
