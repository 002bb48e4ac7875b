"""Plane geometry for lines and zones, vectorised over a frame's anchors (numpy, no Qt).

Image coordinates: x right, y down. Every test is exact (no tolerance): the boxes are
floating-point pixels, so "exactly on the line" and "exactly on a zone's edge" are the cases
where the arithmetic says 0; both are decided here once, and documented in docs/analytics.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Point = tuple[float, float]


def anchors(boxes: np.ndarray) -> np.ndarray:
    """The bottom centre (x, y) of each box (x1, y1, x2, y2): (N, 4) -> (N, 2). DeepStream's
    nvdsanalytics and Frigate anchor objects there: where a person stands."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    return np.stack(((boxes[:, 0] + boxes[:, 2]) * 0.5, boxes[:, 3]), axis=1)


def sides(a: Point, b: Point, points: np.ndarray) -> np.ndarray:
    """The sign of cross(b - a, p - a) per point: +1, -1, or 0 exactly on the (infinite) line.
    `in` is a passage from +1 to -1."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    cross = dx * (points[:, 1] - a[1]) - dy * (points[:, 0] - a[0])
    return np.sign(cross).astype(np.int8)


def crosses_segment(a: Point, b: Point, p0: Point, p1: Point) -> bool:
    """Whether the move p0 -> p1, whose ends lie strictly on opposite sides of the line through
    a and b, passes through the segment a-b itself (its ends included). A move that goes round
    an end of the line changes side without crossing it."""
    ex, ey = b[0] - a[0], b[1] - a[1]
    mx, my = p1[0] - p0[0], p1[1] - p0[1]
    denominator = ex * my - ey * mx  # cross(e, m): not 0, since p0 and p1 are on opposite sides
    if denominator == 0:
        return False
    # Where along a-b the move meets the line: a + t (b - a), t in [0, 1] is on the segment.
    t = ((p0[0] - a[0]) * my - (p0[1] - a[1]) * mx) / denominator
    return 0.0 <= t <= 1.0


class Polygon:
    """A zone's polygon, with its edges prepared once for `contains`."""

    def __init__(self, points: Sequence[Point]) -> None:
        v = np.asarray(points, np.float64).reshape(-1, 2)
        self.points = v
        self._x0, self._y0 = v[:, 0], v[:, 1]
        w = np.roll(v, -1, axis=0)
        self._x1, self._y1 = w[:, 0], w[:, 1]
        self._dx, self._dy = self._x1 - self._x0, self._y1 - self._y0
        self._low, self._high = v.min(axis=0), v.max(axis=0)

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Per point: inside the polygon or on its boundary (the even-odd rule: a polygon
        whose edges cross itself is inside where it winds an odd number of times). A point on
        an edge counts as inside, as a filled polygon (OpenCV's fillPoly) covers its edges."""
        points = np.asarray(points, np.float64).reshape(-1, 2)
        result = np.zeros(len(points), bool)
        if not len(points):
            return result
        box = np.all((points >= self._low) & (points <= self._high), axis=1)
        candidates = np.flatnonzero(box)
        if not len(candidates):
            return result
        px = points[candidates, 0:1]  # (K, 1) against the (E,) edges
        py = points[candidates, 1:2]
        # Ray casting to the right: an edge counts when it spans py (half-open, so a vertex
        # on the ray is counted once) and meets the ray right of px.
        spans = (self._y0 > py) != (self._y1 > py)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = self._x0 + (py - self._y0) * self._dx / self._dy
        crossings = np.count_nonzero(spans & (px < x_at), axis=1)
        inside = (crossings % 2) == 1
        # On an edge: collinear with it and within its extent.
        cross = self._dx * (py - self._y0) - self._dy * (px - self._x0)
        within = (
            (px >= np.minimum(self._x0, self._x1))
            & (px <= np.maximum(self._x0, self._x1))
            & (py >= np.minimum(self._y0, self._y1))
            & (py <= np.maximum(self._y0, self._y1))
        )
        on_edge = np.any((cross == 0) & within, axis=1)
        result[candidates] = inside | on_edge
        return result
