"""Keypoints drawn as lines only (a model's keypoint_style "lines", e.g. the face mesh): the
skeleton's lines without a dot per point; the points appear under the mouse, and the tooltip
names the nearest one."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QPointF
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QGraphicsSceneHoverEvent
from pytestqt.qtbot import QtBot

from app.inference.result import Detection
from app.ui.base.colors import class_rgb
from app.ui.view.image_view import ImageView

W, H = 200, 120
# Two joined points and a lone one (no line reaches it).
KEYPOINTS = ((30.0, 30.0, 0.9), (150.0, 30.0, 0.8), (100.0, 90.0, 0.9))


def _close(got: tuple[int, int, int], want: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(got, want, strict=True))


def _pixel(view: ImageView, x: float, y: float) -> tuple[int, int, int]:
    image = view.grab().toImage()
    p = view.mapFromScene(x, y)
    c = image.pixelColor(p.x(), p.y())
    return c.red(), c.green(), c.blue()


def test_lines_style_draws_the_skeleton_and_shows_points_under_the_mouse(qtbot: QtBot) -> None:
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    view.set_keypoint_style([(0, 1)], ["left", "right", "lone"], dots=False)
    assert view.overlay_style().keypoint_dots is False
    view.set_image(
        np.full((H, W, 3), 100, np.uint8),
        [Detection((10, 10, 190, 110), 0.9, 1, "face", keypoints=KEYPOINTS)],
    )
    view.fit()
    (item,) = view.keypoint_items()
    color = class_rgb(1)
    assert not item.dots and item.toolTip() == ""  # no 468-line tooltip
    assert _close(_pixel(view, 90, 30), color)  # the line
    assert _pixel(view, 100, 90) == (100, 100, 100)  # no dot for the lone point
    # The mouse over the item: the dots appear and the tooltip names the nearest point. The
    # hover events as QGraphicsView makes them of a mouse move: QTest's moves depend on state
    # other tests leave in the application (twice in CI a whole suite's run made no hover
    # of them; never the file alone).
    assert item.acceptHoverEvents()
    scene, at = view.scene(), QPointF(98, 88)
    for kind in (QEvent.Type.GraphicsSceneHoverEnter, QEvent.Type.GraphicsSceneHoverMove):
        hover = QGraphicsSceneHoverEvent(kind)
        hover.setScenePos(at)
        hover.setPos(item.mapFromScene(at))
        scene.sendEvent(item, hover)
    qtbot.waitUntil(lambda: _close(_pixel(view, 100, 90), color), timeout=3000)
    assert item.toolTip() == "lone: (100, 90) 0.90"
    assert item.nearest_tip(view.mapToScene(view.mapFromScene(140, 35))) == "right: (150, 30) 0.80"
    # The same style with dots (the default) draws every visible point and lists them all.
    view.set_keypoint_style([(0, 1)], ["left", "right", "lone"])
    (item,) = view.keypoint_items()
    assert item.dots and "lone: (100, 90) 0.90" in item.toolTip() and "left: (30, 30) 0.90" in item.toolTip()
    QTest.mouseMove(view.viewport(), QPoint(1, 1))
    assert _close(_pixel(view, 100, 90), color)
