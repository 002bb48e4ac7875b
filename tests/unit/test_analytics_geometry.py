"""The plane geometry under lines and zones: sides of a line, a move through a segment, a
point in a (concave) polygon, exactly on the edges too."""

from __future__ import annotations

import numpy as np

from app.analytics.geometry import Polygon, anchors, crosses_segment, sides


def test_the_anchor_is_the_bottom_centre_of_the_box() -> None:
    assert anchors(np.array([[10, 20, 30, 60], [0, 0, 5, 5]])).tolist() == [[20, 60], [2.5, 5]]
    assert anchors(np.zeros((0, 4))).shape == (0, 2)


def test_sides_follow_the_sign_of_the_cross_product() -> None:
    # A vertical line drawn top to bottom: left of it cross(b - a, p - a) > 0.
    a, b = (100.0, 0.0), (100.0, 200.0)
    points = np.array([[50, 10], [150, 10], [100, 500], [100, -30], [99.999, 50]])
    assert sides(a, b, points).tolist() == [1, -1, 0, 0, 1]  # on the infinite line: 0


def test_a_move_crosses_the_segment_only_between_its_ends() -> None:
    a, b = (100.0, 0.0), (100.0, 200.0)
    assert crosses_segment(a, b, (90, 100), (110, 100))  # through the middle
    assert crosses_segment(a, b, (90, 0), (110, 0))  # through an end: the ends belong to it
    assert crosses_segment(a, b, (90, 200), (110, 200))
    assert crosses_segment(a, b, (90, -10), (110, 10))  # diagonally, meeting it at its end (100, 0)
    assert not crosses_segment(a, b, (90, -1), (110, -1))  # just beyond an end
    assert not crosses_segment(a, b, (90, 250), (110, 250))
    assert not crosses_segment(a, b, (90, 190), (110, 230))  # meets the line at y=210: beyond


def test_a_concave_polygon_contains_its_inside_and_its_edges() -> None:
    # A "U": the notch (40..60, 0..50) is outside although within the polygon's bounds.
    u = Polygon([(0, 0), (40, 0), (40, 50), (60, 50), (60, 0), (100, 0), (100, 100), (0, 100)])
    points = np.array(
        [
            [20, 20],  # left arm
            [80, 20],  # right arm
            [50, 20],  # in the notch: outside
            [50, 75],  # the base
            [40, 25],  # on the notch's left edge: inside
            [50, 50],  # on the notch's bottom edge
            [0, 0],  # a vertex
            [100, 100],  # the far vertex
            [101, 50],  # right of everything
            [50, -0.001],  # just above the notch's mouth
            [60.001, 25],  # just right of the notch: in the right arm
        ]
    )
    expected = [True, True, False, True, True, True, True, True, False, False, True]
    assert u.contains(points).tolist() == expected


def test_a_vertex_on_the_ray_is_counted_once() -> None:
    # A diamond: the ray from (0, 0) to the right passes through the vertex (10, 0).
    diamond = Polygon([(0, -10), (10, 0), (0, 10), (-10, 0)])
    assert diamond.contains(np.array([[0, 0], [5, 0], [9.9, 0], [10.1, 0], [-9.9, 0]])).tolist() == [
        True,
        True,
        True,
        False,
        True,
    ]
    assert diamond.contains(np.zeros((0, 2))).tolist() == []
