from __future__ import annotations

from app.inference.decoding.filtering import refilter
from app.inference.result import Detection


def det(box: tuple[float, float, float, float], score: float, cls: int = 0) -> Detection:
    return Detection(box, score, cls, f"class {cls}")


def test_drops_scores_below_threshold() -> None:
    dets = [det((0, 0, 10, 10), 0.9), det((50, 50, 60, 60), 0.2), det((80, 80, 90, 90), 0.5)]
    kept = refilter(dets, 0.5, 0.5)
    assert [d.score for d in kept] == [0.9, 0.5]  # 0.5 itself is kept (>=)
    assert refilter(dets, 0.95, 0.5) == []


def test_suppresses_overlapping_same_class_only() -> None:
    a = det((0, 0, 100, 100), 0.9, cls=0)
    b = det((5, 5, 105, 105), 0.8, cls=0)  # IoU with a ~0.82
    c = det((5, 5, 105, 105), 0.7, cls=1)  # same box, other class
    far = det((300, 300, 350, 350), 0.6, cls=0)
    kept = refilter([b, c, a, far], 0.0, 0.5)
    assert kept == [a, c, far]
    # A looser IoU threshold keeps the overlapping same-class box.
    assert refilter([b, c, a, far], 0.0, 0.9) == [a, b, c, far]


def test_nms_is_greedy_chain() -> None:
    # a suppresses b; b would have suppressed c, but b is gone so c stays.
    a = det((0, 0, 10, 10), 0.9)
    b = det((4, 0, 14, 10), 0.8)  # IoU(a,b) = 6*10/(200-60) = 0.43
    c = det((8, 0, 18, 10), 0.7)  # IoU(a,c) = 0.11, IoU(b,c) = 0.43
    assert refilter([a, b, c], 0.0, 0.4) == [a, c]


def test_empty_and_degenerate_boxes() -> None:
    assert refilter([], 0.1, 0.5) == []
    z = det((5, 5, 5, 5), 0.9)
    assert refilter([z, z], 0.0, 0.5) == [z, z]  # zero-area boxes have IoU 0, nothing divides by 0
