"""Matching two models' results per class by IoU (boxes, masks, semantic masks, top-1)."""

from __future__ import annotations

import numpy as np
import pytest

from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask, Status
from app.pipeline.matching import MatchKind, box_iou_matrix, mask_iou, match_detections, match_results


def det(
    box: tuple[float, float, float, float], class_id: int = 0, score: float = 0.9, **kw: object
) -> Detection:
    return Detection(box, score, class_id, f"class {class_id}", **kw)  # type: ignore[arg-type]


def ok(detections: list[Detection] | None = None, **kw: object) -> InferenceResult:
    return InferenceResult("r", Status.OK, "img.png", detections=detections or [], **kw)  # type: ignore[arg-type]


def test_box_iou_matrix_matches_the_definition() -> None:
    a = np.array([[0, 0, 10, 10], [0, 0, 0, 0]], float)
    b = np.array([[5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 10, 10]], float)
    iou = box_iou_matrix(a, b)
    assert iou.shape == (2, 3)
    assert iou[0, 0] == pytest.approx(50 / 150)
    assert iou[0, 1] == 0.0 and iou[0, 2] == 1.0
    assert not iou[1].any(), "an empty box overlaps nothing (no division by zero)"


def test_planted_differences_are_counted_exactly() -> None:
    a = [det((100, 150, 300, 350)), det((300, 300, 500, 500), 2), det((50, 400, 150, 500))]
    b = [det((400, 300, 600, 500), 2), det((110, 150, 310, 350))]  # shifted 100 px, shifted 10 px
    m = match_detections(a, b, 0.5)
    assert [(i, j) for i, j, _ in m.matched] == [(0, 1)]
    assert m.matched[0][2] == pytest.approx(190 / 210)
    assert m.only_a == [1, 2] and m.only_b == [0]
    assert m.agreement == pytest.approx(0.25)
    relaxed = match_detections(a, b, 0.3)  # the 100 px shift has IoU 1/3
    assert sorted((i, j) for i, j, _ in relaxed.matched) == [(0, 1), (1, 0)]
    assert relaxed.only_a == [2] and relaxed.only_b == []


def test_classes_never_match_each_other_and_each_box_is_used_once() -> None:
    a = [det((0, 0, 10, 10), 0), det((0, 0, 10, 10), 0)]
    b = [det((0, 0, 10, 10), 1), det((1, 0, 11, 10), 0)]
    m = match_detections(a, b)
    assert [(i, j) for i, j, _ in m.matched] == [(0, 1)]  # one of the twin boxes, once
    assert m.only_a == [1] and m.only_b == [0]


def test_greedy_takes_the_best_overlap_first() -> None:
    a = [det((0, 0, 10, 10)), det((2, 0, 12, 10))]
    b = [det((2, 0, 12, 10))]
    m = match_detections(a, b)
    assert [(i, j) for i, j, _ in m.matched] == [(1, 0)] and m.matched[0][2] == 1.0


def test_a_model_against_itself_agrees_fully_and_nothing_against_nothing_too() -> None:
    a = [det((0, 0, 10, 10)), det((20, 20, 40, 40), 3)]
    m = match_detections(a, list(a))
    assert m.agreement == 1.0 and not m.only_a and not m.only_b
    assert match_detections([], []).agreement == 1.0


def disk(size: tuple[int, int], centre: tuple[int, int], radius: int) -> BinaryMask:
    yy, xx = np.mgrid[: size[0], : size[1]]
    return BinaryMask.from_full((xx - centre[0]) ** 2 + (yy - centre[1]) ** 2 < radius**2)


def test_mask_iou_is_counted_on_the_pixels() -> None:
    m1 = disk((100, 120), (40, 50), 20)
    m2 = disk((100, 120), (50, 50), 20)
    full1, full2 = m1.full(), m2.full()
    expected = (full1 & full2).sum() / (full1 | full2).sum()
    assert mask_iou(m1, m2) == pytest.approx(expected)
    assert mask_iou(m1, disk((100, 120), (100, 50), 10)) == 0.0


def test_masks_decide_when_both_detections_have_one() -> None:
    # The same box, but masks that barely overlap: the masks' IoU is what counts.
    left, right = disk((100, 100), (30, 50), 20), disk((100, 100), (70, 50), 20)
    a = [det((10, 30, 90, 70), mask=left)]
    b = [det((10, 30, 90, 70), mask=right)]
    assert match_detections(a, b).matched == []
    b_same = [det((10, 30, 90, 70), mask=left)]
    assert [(i, j) for i, j, _ in match_detections(a, b_same).matched] == [(0, 0)]
    # Only one side has a mask: the boxes decide.
    assert len(match_detections(a, [det((10, 30, 90, 70))]).matched) == 1


def test_keypoints_are_carried_with_their_detection() -> None:
    kp = ((5.0, 5.0, 0.9),)
    a = [det((0, 0, 10, 10), keypoints=kp)]
    m = match_results(ok(a), ok([det((0, 0, 10, 10))]))
    assert m is not None and m.kind is MatchKind.DETECTIONS
    assert a[m.matched[0][0]].keypoints == kp


def test_semantic_masks_match_per_class() -> None:
    sky = SemanticMask(1, "sky", disk((50, 50), (25, 10), 15))
    road_a = SemanticMask(2, "road", disk((50, 50), (25, 45), 10))
    road_b = SemanticMask(2, "road", disk((50, 50), (5, 5), 3))
    m = match_results(ok(masks=[sky, road_a]), ok(masks=[road_b, sky]))
    assert m is not None and m.kind is MatchKind.MASKS
    assert [(i, j) for i, j, _ in m.matched] == [(0, 1)]
    assert m.only_a == [1] and m.only_b == [0]


def test_classifiers_agree_on_their_top_class() -> None:
    cat, dog = ClassScore(1, "cat", 0.8), ClassScore(2, "dog", 0.7)
    same = match_results(ok(classes=[cat, dog]), ok(classes=[cat]))
    assert same is not None and same.kind is MatchKind.CLASSES and same.agreement == 1.0
    differ = match_results(ok(classes=[cat]), ok(classes=[dog, cat]))
    assert differ is not None and differ.agreement == 0.0 and differ.only_a == [0] and differ.only_b == [0]


def test_a_failed_side_gives_no_match() -> None:
    failed = InferenceResult("r", Status.FAILED, "img.png", error="boom")
    assert match_results(ok([det((0, 0, 1, 1))]), failed) is None


def test_record_shape() -> None:
    m = match_detections([det((0, 0, 10, 10))], [det((1, 0, 11, 10)), det((50, 50, 60, 60))])
    assert m.to_record() == {"matched": [[0, 0, round(90 / 110, 4)]], "only_a": [], "only_b": [1]}
