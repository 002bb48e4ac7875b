"""The draw list (Qt-free): what is drawn for a result, in which order, with which style choices."""

from __future__ import annotations

import numpy as np

from app.drawing.draw_list import (
    Dots,
    Fill,
    Lines,
    Outline,
    Placement,
    Polyline,
    Text,
    detection_shape,
    draw_list,
    frozen_trails,
)
from app.drawing.style import AnnotationStyle, class_rgb, picture_scale, text_rgb_on, track_rgb
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, SemanticMask
from app.pipeline.tracking import Track


def _mask(x1: int, y1: int, x2: int, y2: int, w: int = 100, h: int = 80) -> BinaryMask:
    full = np.zeros((h, w), bool)
    full[y1:y2, x1:x2] = True
    return BinaryMask.from_full(full)


POSE = ((10.0, 10.0, 0.9), (30.0, 10.0, 0.8), (20.0, 40.0, 0.1))  # the third is hidden


def test_paint_order_is_the_views_stacking() -> None:
    dets = [
        Detection((5, 5, 50, 50), 0.9, 1, "person", POSE, _mask(10, 10, 40, 40)),
        Detection((60, 5, 90, 30), 0.7, 2, "cat"),
    ]
    track = Track(7, 0, "person", 0, 3)
    track.trail.extend([(20.0, 20.0), (25.0, 22.0)])
    drawing = draw_list(
        (100, 80),
        dets,
        [SemanticMask(4, "road", _mask(0, 60, 100, 80))],
        [ClassScore(0, "tabby", 0.9)],
        AnnotationStyle(skeleton=((0, 1), (1, 2))),
        [track],
    )
    kinds = [type(p).__name__ for p in drawing.primitives()]
    assert kinds == [
        "Fill",  # the semantic mask, under everything
        *("Fill", "Outline", "Text", "Lines", "Dots"),  # the person: mask, box, tag, keypoints
        *("Outline", "Text"),  # the cat
        "Text",  # the top-k corner
        *("Polyline", "Dots", "Text"),  # the trail: line, head, "#7"
    ]


def test_hidden_keypoints_lose_their_dot_and_their_edges() -> None:
    det = Detection((0, 0, 50, 50), 0.9, 1, "person", POSE)
    shape = detection_shape(det, AnnotationStyle(skeleton=((0, 1), (1, 2), (0, 9))))  # 9: no such point
    assert shape.visible == (True, True, False)
    assert shape.edges == ((0, 1),)
    assert shape.skeleton == Lines((((10.0, 10.0), (30.0, 10.0)),), class_rgb(1), 2.0)
    assert shape.dots is not None and shape.dots.points == ((10.0, 10.0), (30.0, 10.0))


def test_edges_only_style_draws_the_skeleton_without_dots() -> None:
    det = Detection((0, 0, 50, 50), 0.9, 1, "face", POSE)
    style = AnnotationStyle(skeleton=((0, 1),), keypoint_dots=False)
    shape = detection_shape(det, style)
    assert shape.dots is None and shape.skeleton is not None and shape.edges == ((0, 1),)
    assert not any(isinstance(p, Dots) for p in shape.primitives())


def test_style_choices_reach_the_primitives() -> None:
    style = AnnotationStyle(mask_opacity=0.25, box_width=3.0)
    det = Detection((1.5, 2.5, 40, 30), 0.934, 0, "face", None, _mask(5, 5, 20, 20))
    shape = detection_shape(det, style)
    assert det.mask is not None and shape.fill == Fill(det.mask, class_rgb(0), 0.25)
    assert shape.outline == Outline((1.5, 2.5, 40.0, 30.0), class_rgb(0), 3.0)
    assert shape.tag.lines == ("face 0.93",) and shape.tag.placement is Placement.ABOVE
    assert shape.tag.anchor == (1.5, 2.5) and shape.tag.background == (*class_rgb(0), 255)
    assert shape.tag.color == text_rgb_on(class_rgb(0))
    # Another colour (a compared model's own), and a light one gets black text.
    yellow = detection_shape(det, style, color=(250, 230, 40))
    assert yellow.outline.color == (250, 230, 40) and yellow.tag.color == (0, 0, 0)


def test_empty_masks_and_no_classes_draw_nothing() -> None:
    empty = BinaryMask.from_full(np.zeros((80, 100), bool))
    drawing = draw_list((100, 80), [], [SemanticMask(1, "sky", empty)], [])
    assert list(drawing.primitives()) == []


def test_top_k_corner_lists_every_class() -> None:
    drawing = draw_list((100, 80), [], None, [ClassScore(3, "cat", 0.9), ClassScore(5, "dog", 0.05)])
    assert isinstance(drawing.classes, Text)
    assert (
        drawing.classes.lines == ("cat  0.90", "dog  0.05") and drawing.classes.placement is Placement.CORNER
    )
    assert drawing.classes.anchor == (0.0, 0.0)


def test_trails_are_frozen_per_frame_and_a_single_point_has_no_line() -> None:
    track = Track(3, 0, "car", 0, 0)
    track.trail.append((5.0, 6.0))
    frozen = frozen_trails([track])
    track.trail.append((9.0, 9.0))  # the tracker goes on: the frame's snapshot does not change
    (trail,) = draw_list((100, 80), [], tracks=frozen).trails
    assert trail.line is None and trail.head.points == ((5.0, 6.0),)
    assert trail.head.fill == track_rgb(3) and trail.tag.lines == ("#3",)
    (moving,) = draw_list((100, 80), [], tracks=[track]).trails
    assert moving.line == Polyline(((5.0, 6.0), (9.0, 9.0)), track_rgb(3), AnnotationStyle().trail_width)
    assert track_rgb(1) != track_rgb(2) != track_rgb(3)


def test_pictures_share_the_views_scale_up_to_480_pixels() -> None:
    assert picture_scale(640, 480) == 1.0 and picture_scale(200, 120) == 1.0
    assert picture_scale(1920, 1080) == 1080 / 480
