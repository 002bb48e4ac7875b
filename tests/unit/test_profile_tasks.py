"""Telling pose / segment / semantic / classify models apart from their metadata, config
parameters and shapes; the profile file keys for them."""

from pathlib import Path

import pytest

from app.inference.decoding.keypoints import (
    COCO_KEYPOINT_NAMES,
    COCO_SKELETON,
    parse_kpt_shape,
    parse_skeleton,
)
from app.inference.profiles.profile import ProfileError, apply_overrides, detect_profile, load_profile_file
from app.inference.profiles.task_summary import task_summary
from tests.unit.test_profile import EFFNMS_OUT, model

IMAGES = [("images", "FP32", [3, 640, 640])]
RAW_IMAGE = [("image", "UINT8", [-1, -1, 3])]


def test_efficientnms_with_a_keypoints_output_is_pose() -> None:
    outs = [*EFFNMS_OUT, ("det_keypoints", "FP32", [100, 6, 3])]
    p = detect_profile(*model(RAW_IMAGE, outs, 8, {"labels": "face", "keypoint_names": "a,b,c,d,e,f"}))
    assert (p.task, p.output_format, p.kpt_shape) == ("pose", "efficientnms", (6, 3))
    assert p.output_names == ("num_dets", "det_boxes", "det_scores", "det_classes", "det_keypoints")
    assert p.keypoint_names == ("a", "b", "c", "d", "e", "f") and p.skeleton == ()
    assert "6 keypoints" in task_summary(p) and "det_keypoints" in task_summary(p)
    # A profile (or config parameter) saying "detect" reads the boxes only.
    boxes_only = detect_profile(*model(RAW_IMAGE, outs, 8), {"task": "detect"})
    assert (boxes_only.task, len(boxes_only.output_names)) == ("detect", 4)


def test_flat_keypoints_output_needs_kpt_shape() -> None:
    outs = [*EFFNMS_OUT, ("landmarks", "FP32", [100, 10])]
    with pytest.raises(ProfileError, match="kpt_shape"):
        detect_profile(*model(IMAGES, outs, 4))
    p = detect_profile(*model(IMAGES, outs, 4, {"kpt_shape": "5,2"}))
    assert (p.task, p.kpt_shape, p.output_names[-1]) == ("pose", (5, 2), "landmarks")


def test_raw_yolov8_pose_from_the_shape_alone_is_coco_person() -> None:
    p = detect_profile(*model(IMAGES, [("output0", "FP32", [56, 8400])], 4))
    assert (p.task, p.output_format, p.kpt_shape, p.num_classes) == ("pose", "yolov8", (17, 3), 1)
    assert p.labels == ("person",) and p.skeleton == COCO_SKELETON and p.keypoint_names == COCO_KEYPOINT_NAMES
    assert "coco17" in task_summary(p)


def test_raw_yolov8_pose_from_kpt_shape_parameter_or_labels() -> None:
    # 4 + 2 classes + 5 x 2 = 16 channels: only the config's kpt_shape can tell.
    outs = [("output0", "FP32", [16, 8400])]
    p = detect_profile(
        *model(IMAGES, outs, 4, {"kpt_shape": "[5, 2]", "labels": "cat,dog", "skeleton": "0-1,1-2"})
    )
    assert (p.task, p.kpt_shape, p.num_classes, p.labels) == ("pose", (5, 2), 2, ("cat", "dog"))
    assert p.skeleton == ((0, 1), (1, 2)) and p.keypoint_names == ()
    # Without kpt_shape the same output is a 12-class detector.
    assert detect_profile(*model(IMAGES, outs, 4)).task == "detect"
    # With 2 labels, 4 + 2 + 4 x 3 = 18 channels: 4 keypoints of 3 values.
    q = detect_profile(*model(IMAGES, [("output0", "FP32", [18, 8400])], 4, {"labels": "a,b"}))
    assert (q.task, q.kpt_shape, q.num_classes) == ("pose", (4, 3), 2)


def test_pose_asked_for_but_unknown_layout_says_so() -> None:
    with pytest.raises(ProfileError, match="kpt_shape"):
        detect_profile(*model(IMAGES, [("output0", "FP32", [84, 8400])], 4, {"task": "pose"}))
    with pytest.raises(ProfileError, match="leaves no class scores"):
        detect_profile(*model(IMAGES, [("output0", "FP32", [20, 8400])], 4, {"kpt_shape": "17,3"}))


def test_raw_yolov8_segmentation_with_prototypes() -> None:
    outs = [("output0", "FP32", [1, 116, 8400]), ("output1", "FP32", [1, 32, 160, 160])]
    p = detect_profile(*model([("images", "FP32", [1, 3, 640, 640])], outs))
    assert (p.task, p.output_format, p.output_names, p.num_classes) == (
        "segment", "yolov8", ("output0", "output1"), 80,
    )  # fmt: skip
    assert p.labels[0] == "person"  # 80 classes: COCO
    # Prototypes listed first, batched by Triton: same answer.
    q = detect_profile(*model(IMAGES, [("protos", "FP32", [32, 160, 160]), ("det", "FP32", [38, 8400])], 2))
    assert (q.task, q.output_names, q.num_classes) == ("segment", ("det", "protos"), 2)


def test_classification_vectors() -> None:
    for outs, batch in (([("probs", "FP32", [1000])], 8), ([("logits", "FP32", [1, 1000])], 0),
                        ([("fc", "FP32", [1000, 1, 1])], 4)):  # fmt: skip
        p = detect_profile(*model([("input", "FP32", [3, 224, 224])], outs, batch))
        assert (p.task, p.output_format, p.output_names) == ("classify", "classify", (outs[0][0],))
        assert (p.preprocess, p.logits, p.top_k) == ("resize", False, 5)
    p = detect_profile(
        *model([("input", "FP32", [3, 224, 224])], [("y", "FP32", [10])], 4, {"logits": "true", "top_k": "3"})
    )
    assert (p.logits, p.top_k) == (True, 3)
    assert "softmax" in task_summary(p)


def test_semantic_maps_of_each_layout() -> None:
    chw = detect_profile(*model(RAW_IMAGE, [("mask", "FP32", [1, 256, 256])], 8, {"labels": "person"}))
    assert (chw.task, chw.map_layout, chw.preprocess, chw.labels) == ("semantic", "CHW", "raw", ("person",))
    hwc = detect_profile(*model([("x", "FP32", [3, 512, 512])], [("y", "FP32", [128, 128, 21])], 2))
    assert (hwc.task, hwc.map_layout) == ("semantic", "HWC")
    ids = detect_profile(*model([("x", "FP32", [3, 512, 512])], [("classes", "INT64", [512, 512])], 2))
    assert (ids.task, ids.map_layout) == ("semantic", "HW")
    # The config can say so where shapes cannot.
    told = detect_profile(
        *model([("x", "FP32", [3, 64, 64])], [("y", "FP32", [64, 64])], 0, {"task": "semantic"})
    )
    assert told.task == "semantic"


def test_bad_task_parameters_name_the_parameter() -> None:
    with pytest.raises(ProfileError, match="kpt_shape"):
        detect_profile(*model(IMAGES, [("output0", "FP32", [56, 8400])], 4, {"kpt_shape": "seventeen"}))
    with pytest.raises(ProfileError, match="task"):
        detect_profile(*model(IMAGES, [("output0", "FP32", [84, 8400])], 4, {"task": "track"}))
    with pytest.raises(ProfileError, match="skeleton pair"):
        detect_profile(*model(IMAGES, [("output0", "FP32", [56, 8400])], 4, {"skeleton": "0-40"}))


def test_profile_file_task_keys(tmp_path: Path) -> None:
    f = tmp_path / "pose.toml"
    f.write_text(
        'task = "pose"\nkpt_shape = [4, 3]\nskeleton = [[0, 1], [2, 3]]\n'
        'keypoint_names = ["a", "b", "c", "d"]\nlogits = false\n'
        '[output]\nformat = "yolov8"\nnames = ["out"]\n[postprocess]\ntop_k = 3\nmask_threshold = 0.4\n'
    )
    overrides = load_profile_file(f)
    assert overrides["kpt_shape"] == (4, 3) and overrides["skeleton"] == ((0, 1), (2, 3))
    p = detect_profile(*model(IMAGES, [("out", "FP32", [17, 8400])], 4), overrides)
    assert (p.task, p.kpt_shape, p.num_classes, p.keypoint_names) == ("pose", (4, 3), 1, ("a", "b", "c", "d"))
    assert (p.top_k, p.mask_threshold) == (3, 0.4)
    seg = tmp_path / "semantic.toml"
    seg.write_text('task = "semantic"\n[output]\nmap_layout = "hwc"\n')
    q = detect_profile(
        *model([("x", "FP32", [3, 64, 64])], [("y", "FP32", [64, 64, 3])], 0), load_profile_file(seg)
    )
    assert (q.task, q.map_layout, q.output_format) == ("semantic", "HWC", "semantic")
    bad = tmp_path / "bad.toml"
    bad.write_text("kpt_shape = [17, 4]\n")
    with pytest.raises(ProfileError, match="kpt_shape"):
        load_profile_file(bad)


def test_task_and_format_must_agree() -> None:
    p = detect_profile(*model(IMAGES, [("output0", "FP32", [84, 8400])], 4))
    with pytest.raises(ProfileError, match="task 'classify'"):
        apply_overrides(p, {"task": "classify"})
    with pytest.raises(ProfileError, match="reads 2 output"):
        apply_overrides(p, {"task": "segment", "output_format": "yolov8"})


def test_kpt_shape_and_skeleton_parsing() -> None:
    assert parse_kpt_shape("17,3") == parse_kpt_shape("[17, 3]") == parse_kpt_shape("17x3") == (17, 3)
    assert parse_kpt_shape([5, 2]) == (5, 2)
    for bad in ("17", "17,4", [0, 3], "a,b", [True, 3]):
        with pytest.raises(ValueError):
            parse_kpt_shape(bad)
    assert parse_skeleton("COCO17") == COCO_SKELETON and parse_skeleton("none") == ()
    assert parse_skeleton("0-1, 1-2") == parse_skeleton("[[0, 1], [1, 2]]") == ((0, 1), (1, 2))
    for bad in ("0-1-2", "[[0]]", "[[0, -1]]", 5, "[[0,"):
        with pytest.raises(ValueError):
            parse_skeleton(bad)
