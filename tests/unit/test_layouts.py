"""Export layouts recognised from outputs' names, shapes and the exporter's metadata, and
decoded as their exporters' own post-processing does (on outputs written in that layout).
The same decoders were checked against Ultralytics 8.4 and ddddocr 1.6.1 (docs/models.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.commands.models import describe_profile
from app.inference.decoding.decode_grids import insightface_nms
from app.inference.decoding.decode_obb import fast_nms_rotated, probiou
from app.inference.decoding.letterbox import ResizeTransform, letterbox_insightface
from app.inference.profiles.profile import ProfileError, decode_outputs, detect_profile, preprocess
from app.inference.transports.constant_inputs import size_inputs
from tests.unit.test_profile import model

IMAGES = [("images", "FP32", [3, 320, 320])]
META_E2E = "{'task': '%s', 'imgsz': [320, 320], 'end2end': True, 'names': {0: 'a', 1: 'b'}%s}"


def _profile(outputs, parameters=None, batch=1):
    return detect_profile(*model(IMAGES, outputs, batch, parameters))


def _identity(w: int = 320, h: int = 320) -> ResizeTransform:
    return ResizeTransform(1.0, 1.0, w, h, w, h)


def test_end2end_detect_from_its_shape_and_from_the_metadata() -> None:
    shaped = _profile([("output0", "FP32", [300, 6])])
    assert (shaped.output_format, shaped.task) == ("end2end", "detect")
    assert "end-to-end" in shaped.layout_reason and "shape" in shaped.layout_reason
    told = _profile([("output0", "FP32", [300, 6])], {"metadata": META_E2E % ("detect", "")})
    assert told.layout_reason.endswith("(metadata end2end): x1, y1, x2, y2, score, class")
    rows = np.zeros((1, 300, 6), np.float32)
    rows[0, 0] = [10, 20, 110, 220, 0.9, 1]
    rows[0, 1] = [0, 0, 50, 50, 0.2, 0]  # under the threshold (0.25)
    rows[0, 2] = [30, 30, 60, 60, 0.5, 0]  # after a lower one: the model's order is kept
    dets = decode_outputs({"output0": rows}, told, _identity()).detections
    assert [(d.box, round(d.score, 3), d.label) for d in dets] == [
        ((10.0, 20.0, 110.0, 220.0), 0.9, "b"),
        ((30.0, 30.0, 60.0, 60.0), 0.5, "a"),
    ]


def test_end2end_pose_keypoints_and_obb_angle() -> None:
    pose = _profile([("output0", "FP32", [300, 57])])
    assert (pose.task, pose.kpt_shape) == ("pose", (17, 3))
    rows = np.zeros((1, 300, 57), np.float32)
    rows[0, 0, :6] = [10, 10, 100, 100, 0.8, 0]
    rows[0, 0, 6:] = np.tile([50.0, 60.0, 0.7], 17)
    (det,) = decode_outputs({"output0": rows}, pose, _identity()).detections
    assert det.keypoints is not None and det.keypoints[0] == pytest.approx((50.0, 60.0, 0.7))
    obb = _profile([("output0", "FP32", [300, 7])], {"metadata": META_E2E % ("obb", "")})
    assert (obb.output_format, obb.task) == ("end2end", "obb")
    rows = np.zeros((1, 300, 7), np.float32)
    rows[0, 0] = [160, 160, 100, 20, 0.9, 1, math.pi / 2]  # a 100 x 20 box stood upright
    (det,) = decode_outputs({"output0": rows}, obb, _identity()).detections
    assert det.obb == pytest.approx((160, 160, 100, 20, math.pi / 2))
    assert det.box == pytest.approx((150, 110, 170, 210), abs=1e-3)
    record = det.to_record()
    assert record["obb"][:4] == [160, 160, 100, 20] and len(record["polygon"]) == 4


def test_raw_obb_needs_the_task_and_suppresses_by_probiou() -> None:
    meta = (META_E2E % ("obb", "")).replace("'end2end': True", "'end2end': False")
    p = _profile([("output0", "FP32", [4 + 2 + 1, 2100])], {"metadata": meta})
    assert (p.output_format, p.task, p.num_classes) == ("yolov8", "obb", 2)
    rows = np.zeros((1, 7, 2100), np.float32)
    rows[0, :, 0] = [100, 100, 80, 20, 0.9, 0, 0.3]
    rows[0, :, 1] = [101, 100, 80, 20, 0.8, 0, 0.3]  # the same box: suppressed
    rows[0, :, 2] = [101, 100, 80, 20, 0.1, 0.7, 0.3]  # another class: kept
    dets = decode_outputs({"output0": rows}, p, _identity()).detections
    assert [(round(d.score, 2), d.class_id) for d in dets] == [(0.9, 0), (0.7, 1)]
    same = np.array([[0, 0, 10, 4, 0.5]])
    assert probiou(same, same)[0, 0] == pytest.approx(1.0, abs=1e-3)
    far = np.array([[0, 0, 10, 4, 0.5], [100, 100, 10, 4, 0.5]])
    assert list(fast_nms_rotated(far, np.array([0.5, 0.9]), 0.7)) == [1, 0]


def test_rtdetr_ultralytics_is_told_by_its_metadata() -> None:
    meta = "{'task': 'detect', 'imgsz': [320, 320], 'end2end': False, 'names': {0: 'a'}}"
    p = _profile([("output0", "FP32", [300, 6])], {"metadata": meta})
    assert (p.output_format, p.boxes_in, p.preprocess) == ("rtdetr", "normalized", "resize")
    rows = np.zeros((1, 300, 6), np.float32)
    rows[0, 0] = [0.5, 0.5, 0.5, 0.25, 0.6, 0]
    (det,) = decode_outputs({"output0": rows}, p, ResizeTransform(0.5, 0.5, 640, 640, 320, 320)).detections
    assert det.box == pytest.approx((160, 240, 480, 400))


def test_yolox_needs_the_labels_count_and_decodes_grid_and_stride() -> None:
    outputs = [("output", "FP32", [1, 3549, 6])]
    shape = [("images", "FP32", [1, 3, 416, 416])]
    p = detect_profile(*model(shape, outputs, 0, {"labels": "text"}))
    assert (p.output_format, p.preprocess, p.channel_order, p.scale) == (
        "yolox",
        "letterbox_top_left",
        "BGR",
        1.0,
    )
    rows = np.zeros((1, 3549, 6), np.float32)
    rows[0, :, 4] = 0.0
    cell = 52 * 52 + 3 * 26 + 5  # stride 16, grid x 5, y 3
    rows[0, cell] = [0.5, 0.5, math.log(2.0), math.log(1.0), 0.9, 0.5]
    (det,) = decode_outputs({"output": rows}, p, ResizeTransform(1, 1, 416, 416, 416, 416)).detections
    # centre ((5 + 0.5) * 16, (3 + 0.5) * 16) = (88, 56), size 32 x 16
    assert det.box == pytest.approx((72, 48, 104, 64)) and det.score == pytest.approx(0.45)
    image = np.full((100, 200, 3), 7, np.uint8)
    x, t = preprocess(image, p)
    assert x.shape == (1, 3, 416, 416) and x[0, 0, 0, 0] == 7 and x[0, 0, -1, -1] == 114  # top-left
    assert t.to_original(np.array([[0, 0, 416, 208]], np.float32)).tolist() == [[0, 0, 200, 100]]


def test_detr_softmax_and_sigmoid_and_torchvision_sets() -> None:
    detr = _profile([("pred_boxes", "FP32", [100, 4]), ("logits", "FP32", [100, 92])])
    assert (detr.output_format, detr.score_activation) == ("detr", "softmax")
    logits = np.full((1, 100, 92), -10.0, np.float32)
    logits[0, :, -1] = 10.0  # "no object"
    logits[0, 3, 17] = 10.0
    boxes = np.tile(np.array([0.5, 0.5, 0.2, 0.4], np.float32), (1, 100, 1))
    (det,) = decode_outputs({"pred_boxes": boxes, "logits": logits}, detr, _identity()).detections
    assert (
        det.class_id == 17
        and det.box == pytest.approx((128, 96, 192, 224))
        and det.score == pytest.approx(0.5)
    )
    rt = _profile([("boxes", "FP32", [300, 4]), ("logits", "FP32", [300, 80])])
    assert rt.score_activation == "sigmoid"
    lg = np.full((1, 300, 80), -10.0, np.float32)
    lg[0, 7, 2] = 2.0
    (det,) = decode_outputs({"boxes": boxes[:, :1].repeat(300, 1), "logits": lg}, rt, _identity()).detections
    assert det.class_id == 2 and det.score == pytest.approx(1 / (1 + math.exp(-2)))
    tv = _profile([("boxes", "FP32", [-1, 4]), ("labels", "INT64", [-1]), ("scores", "FP32", [-1])], batch=0)
    assert tv.output_format == "torchvision"
    empty = {"boxes": np.zeros((0, 4), np.float32), "labels": np.zeros(0, np.int64)}
    none = decode_outputs({**empty, "scores": np.zeros(0, np.float32)}, tv, _identity()).detections
    assert none == []
    two = decode_outputs(
        {"boxes": np.array([[1, 2, 30, 40], [5, 5, 9, 9]], np.float32), "labels": np.array([3, 4]),
         "scores": np.array([0.3, 0.9], np.float32)}, tv, _identity(),
    ).detections  # fmt: skip
    assert [(d.class_id, d.box) for d in two] == [(4, (5, 5, 9, 9)), (3, (1, 2, 30, 40))]


def test_scrfd_by_names_two_anchors_per_cell_and_five_keypoints() -> None:
    outs = []
    for kind, width in (("score", 1), ("bbox", 4), ("kps", 10)):
        outs += [(f"{kind}_{s}", "FP32", [2 * (320 // s) ** 2, width]) for s in (8, 16, 32)]
    p = detect_profile(*model(IMAGES, outs, 0))
    assert (p.output_format, p.task, p.kpt_shape, p.preprocess) == (
        "scrfd",
        "pose",
        (5, 2),
        "letterbox_insightface",
    )
    assert p.labels == ("face",)
    tensors = {name: np.zeros(shape, np.float32) for name, _d, shape in outs}
    anchor = 2 * (3 * 10 + 4) + 1  # stride 32, cell x 4, y 3, second anchor: centre (128, 96)
    tensors["score_32"][anchor] = 0.9
    tensors["bbox_32"][anchor] = [1, 1, 1, 2]
    tensors["kps_32"][anchor] = [0.5, 0.25] * 5
    (det,) = decode_outputs(tensors, p, _identity()).detections
    assert det.box == pytest.approx((96, 64, 160, 160)) and det.score == pytest.approx(0.9)
    assert det.keypoints is not None and det.keypoints[0][:2] == pytest.approx((144, 104))


def test_scrfd_sizes_and_scales_the_picture_as_insightface_does() -> None:
    # A 600x400 photo into 320x320: insightface's detect gives 320x213 (int of 320 * 2/3) and
    # one scale, 213 / 400, for both axes (not 320 / 600 for x): 0.9 px at the right edge.
    picture = np.full((400, 600, 3), 200, np.uint8)
    sent, transform = letterbox_insightface(picture, (320, 320))
    assert sent.shape == (320, 320, 3) and sent[212, 319, 0] == 200 and sent[213, 0, 0] == 0
    assert transform.affine() == (213 / 400, 213 / 400, 0.0, 0.0)
    assert transform.to_original(np.array([[0, 0, 320, 213]]))[0] == pytest.approx((0, 0, 600, 400))
    _tall, tall_transform = letterbox_insightface(np.zeros((500, 100, 3), np.uint8), (320, 320))
    assert tall_transform.affine()[0] == 320 / 500  # height-bound: the height to the input's


def test_insightface_nms_counts_pixels_inclusively() -> None:
    # Two 10x10 boxes shifted by 4: IoU 60/140 = 0.43 as areas go, (7*11)/(2*121-77) = 0.47
    # pixel-inclusive as insightface counts: at 0.45 only its way drops the second.
    dets = np.array([[0, 0, 10, 10, 0.9], [4, 0, 14, 10, 0.8]], np.float32)
    assert insightface_nms(dets, 0.45) == [0]
    assert insightface_nms(dets, 0.5) == [0, 1]


def test_an_unknown_layout_names_what_it_saw_and_the_profile_file() -> None:
    with pytest.raises(ProfileError) as err:
        _profile([("weird", "FP32", [3, 5, 7, 9])])
    assert "weird FP32 [-1, 3, 5, 7, 9]" in str(err.value) and "--profile FILE" in str(err.value)


def test_an_oriented_box_is_drawn_rotated_and_exported_as_yolo_obb_and_dota() -> None:
    from app.drawing.draw_list import Outline, Polyline, detection_shape
    from app.drawing.style import AnnotationStyle
    from app.inference.result import Detection
    from app.pipeline.exports.dota import dota_text
    from app.pipeline.exports.images import ExportImage
    from app.pipeline.exports.yolo import yolo_text

    det = Detection((150, 110, 170, 210), 0.9, 1, "small vehicle", obb=(160, 160, 100, 20, math.pi / 2))
    shape = detection_shape(det, AnnotationStyle())
    drawn = list(shape.primitives())
    assert not any(isinstance(p, Outline) for p in drawn)
    (outline,) = [p for p in drawn if isinstance(p, Polyline)]
    assert len(outline.points) == 5 and outline.points[0] == outline.points[-1]
    assert outline.points[0] == pytest.approx((150, 210))  # Ultralytics' first corner
    image = ExportImage("cars.png", "cars.png", 320, 320, [det])
    assert dota_text(image) == "150.0 210.0 170.0 210.0 170.0 110.0 150.0 110.0 small_vehicle 0\n"
    assert yolo_text(image) == "1 0.468750 0.656250 0.531250 0.656250 0.531250 0.343750 0.468750 0.343750\n"


DFINE_OUT = [("labels", "INT64", [300]), ("boxes", "FP32", [300, 4]), ("scores", "FP32", [300])]


def test_an_official_rtdetr_dfine_export_gets_its_size_input_and_a_plain_resize() -> None:
    inputs = [("images", "FP32", [3, 640, 640]), ("orig_target_sizes", "INT64", [2])]
    p = detect_profile(*model(inputs, DFINE_OUT, 4))
    assert (p.input_name, p.size_input, p.size_input_dtype) == ("images", "orig_target_sizes", "INT64")
    assert (p.output_format, p.preprocess, p.boxes_in) == ("torchvision", "resize", "input")
    # The transports send it as [batch, 2] (width, height) of the model input.
    (size,) = size_inputs(p.size_input, p.size_input_dtype, (480, 640), True)
    assert size.tensor(3).tolist() == [[640, 480]] * 3 and size.tensor(3).dtype == np.int64
    (unbatched,) = size_inputs("s", "FP32", (480, 640), False)
    assert unbatched.tensor(1).tolist() == [640.0, 480.0]
    assert size_inputs(None, "INT64", (640, 640), True) == ()
    assert "size input: orig_target_sizes INT64, sent the model-input width, height" in describe_profile(p)


def test_an_input_the_app_cannot_fill_is_named_and_an_optional_one_is_left_out() -> None:
    inputs = [("images", "FP32", [3, 640, 640]), ("scale_factor", "FP32", [2])]
    with pytest.raises(ProfileError, match=r"input scale_factor FP32 \[-1, 2\] is not the image") as e:
        detect_profile(*model(inputs, DFINE_OUT, 4))
    assert "orig_target_sizes" in str(e.value) and "--profile" in str(e.value)
    meta, config = model(inputs, DFINE_OUT, 4)
    config["config"]["input"][1]["optional"] = True
    assert detect_profile(meta, config).size_input is None
