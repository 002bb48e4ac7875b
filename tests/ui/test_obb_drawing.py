"""An oriented box (OBB model) is drawn as its rotated outline in the view, not as the
axis-aligned box around it."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF
from pytestqt.qtbot import QtBot

from app.inference.result import Detection
from app.ui.view.image_view import ImageView


def _lit(view: ImageView, x: float, y: float) -> bool:
    """Whether the view's pixels around image point (x, y) are painted (the image is black)."""
    image = view.viewport().grab().toImage()
    p = view.mapFromScene(QPointF(x, y))
    near = [image.pixelColor(p.x() + dx, p.y() + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
    return max(max(c.red(), c.green(), c.blue()) for c in near) > 60


def test_an_oriented_box_is_drawn_rotated(qtbot: QtBot) -> None:
    black = np.zeros((200, 200, 3), np.uint8)
    # A 100 x 40 box turned by 45 degrees about (100, 100): its axis-aligned box is ~99 px wide.
    det = Detection((50.5, 50.5, 149.5, 149.5), 0.9, 0, "plane", obb=(100, 100, 100, 40, math.pi / 4))
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(300, 300)
    view.set_image(black, [det])
    view.show()
    qtbot.waitExposed(view)
    view.actual_size()
    qtbot.wait(50)
    corners = det.polygon()
    assert corners is not None
    (ax, ay), (bx, by) = corners[0], corners[1]
    assert _lit(view, (ax + bx) / 2, (ay + by) / 2)  # the middle of a rotated side
    assert _lit(view, ax, ay)  # a corner of the rotated box
    assert not _lit(view, 52, 52) and not _lit(view, 148, 52)  # corners of the axis-aligned box
