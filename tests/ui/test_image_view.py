from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QGraphicsItem
from pytestqt.qtbot import QtBot

from app.inference.result import Detection
from app.ui.base.colors import class_color
from app.ui.view.image_view import ImageView


def _view(qtbot: QtBot, image: np.ndarray, dets: list[Detection]) -> ImageView:
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.set_image(image, dets)
    view.show()
    qtbot.waitExposed(view)
    return view


def _assert_rect(view: ImageView, expected: tuple[float, float, float, float]) -> None:
    (item,) = view.box_items()
    r = item.sceneBoundingRect()
    for got, want in zip((r.left(), r.top(), r.right(), r.bottom()), expected, strict=True):
        assert abs(got - want) <= 1.0, (r, expected)
    # The geometry itself is exact (the bounding rect adds half the pen width).
    exact = item.mapRectToScene(item.rect())
    assert (exact.left(), exact.top(), exact.right(), exact.bottom()) == expected


def _wheel(view: ImageView, notches: int, pos: QPoint) -> None:
    event = QWheelEvent(
        QPointF(pos),
        QPointF(view.viewport().mapToGlobal(pos)),
        QPoint(0, 0),
        QPoint(0, 120 * notches),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(view.viewport(), event)


def test_box_lands_at_image_pixels_at_any_zoom(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    det = Detection((10, 20, 110, 220), 0.93, 0, "face")
    view = _view(qtbot, rgb_image, [det])
    _assert_rect(view, (10, 20, 110, 220))
    view.zoom_by(3.0)
    _assert_rect(view, (10, 20, 110, 220))
    view.actual_size()
    _assert_rect(view, (10, 20, 110, 220))
    # ...and it is drawn where the image pixel (10, 20) is on screen.
    assert view.mapFromScene(QPointF(10, 20)) == view.mapFromScene(view.box_items()[0].rect().topLeft())


def test_box_style_cosmetic_pen_class_colour_and_unscaled_label(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    dets = [Detection((10, 20, 110, 220), 0.93, 0, "face"), Detection((150, 30, 200, 90), 0.5, 3, "cat")]
    view = _view(qtbot, rgb_image, dets)
    a, b = view.box_items()
    assert a.pen().isCosmetic() and a.pen().widthF() >= 1.5
    assert a.pen().color() == class_color(0)
    assert b.pen().color() == class_color(3) != class_color(0)
    assert a.label_item.text() == "face 0.93"
    assert a.label_item.flags() & QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations

    # The label keeps its on-screen size whatever the zoom.
    def on_screen():  # the label's rectangle in viewport pixels
        label = a.label_item
        return label.deviceTransform(view.viewportTransform()).mapRect(label.boundingRect())

    before = on_screen()
    view.zoom_by(4.0)
    after = on_screen()
    assert abs(before.width() - after.width()) < 0.5
    assert abs(before.height() - after.height()) < 0.5
    # It still sits on the box's top-left corner (just above it).
    corner = view.mapFromScene(QPointF(10, 20))
    assert abs(after.left() - corner.x()) <= 2 and abs(after.bottom() - corner.y()) <= 2


def test_wheel_zoom_changes_transform_and_fit_restores(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    view = _view(qtbot, rgb_image, [])
    assert view.is_fit_mode()
    fitted = view.zoom_factor()
    # Fit: the whole 320x240 image fills the 400x300 view (scale 1.25).
    assert abs(fitted - 1.25) < 0.05
    pos = QPoint(100, 80)
    under_cursor = view.mapToScene(pos)
    _wheel(view, 2, pos)
    assert view.zoom_factor() > fitted * 1.5
    assert not view.is_fit_mode()
    # Zoom is around the cursor: the same image point stays under it.
    moved = view.mapToScene(pos) - under_cursor
    assert abs(moved.x()) <= 2 and abs(moved.y()) <= 2
    view.resize(800, 600)  # not in fit mode any more: resizing keeps the zoom
    qtbot.wait(10)
    zoomed = view.zoom_factor()
    assert zoomed > fitted * 1.5
    view.fit()
    assert abs(view.zoom_factor() - 2.5) < 0.05  # fits 800x600 now
    view.resize(400, 300)  # fit mode follows the window
    qtbot.waitUntil(lambda: abs(view.zoom_factor() - 1.25) < 0.05)
    view.actual_size()
    assert view.zoom_factor() == 1.0 and not view.is_fit_mode()


def test_set_detections_replaces_boxes_and_keeps_image(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    view = _view(qtbot, rgb_image, [Detection((0, 0, 10, 10), 0.9, 0, "a")] * 3)
    assert len(view.box_items()) == 3
    old = view.box_items()
    view.set_detections([Detection((5, 6, 50, 60), 0.8, 1, "b")])
    (item,) = view.box_items()
    assert item not in old and all(o.scene() is None for o in old)
    assert item.rect().topLeft() == QPointF(5, 6)
    assert view.image_size() == (320, 240)
    view.clear()
    assert view.box_items() == [] and view.image_size() is None


def test_image_pixels_are_shown_correctly_for_odd_width(qtbot: QtBot) -> None:
    # width 5: rows are not 4-byte aligned; a wrong bytesPerLine shears the image.
    img = np.zeros((4, 5, 3), np.uint8)
    img[:, 4] = (255, 0, 0)
    view = _view(qtbot, img, [])
    pixmap = view.shown_image()
    for y in range(4):
        assert pixmap.pixelColor(4, y).red() == 255 and pixmap.pixelColor(3, y).red() == 0


def test_same_size_image_keeps_user_zoom(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    view = _view(qtbot, rgb_image, [])
    view.zoom_by(2.0)
    zoom = view.zoom_factor()
    view.set_image(rgb_image[::-1].copy(), [])
    assert view.zoom_factor() == zoom
    view.set_image(np.zeros((100, 600, 3), np.uint8), [])  # a new size refits
    assert view.is_fit_mode()
    assert abs(view.zoom_factor() - 400 / 600) < 0.05


def test_drag_pans_the_view(qtbot: QtBot, rgb_image: np.ndarray) -> None:
    view = _view(qtbot, rgb_image, [])
    view.zoom_by(4.0)
    vp = view.viewport()
    start, end = QPoint(200, 150), QPoint(120, 100)
    center_before = view.mapToScene(start)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=start)
    for k in range(1, 6):
        move = QMouseEvent(
            QEvent.Type.MouseMove,
            QPointF(start + (end - start) * k / 5),
            QPointF(vp.mapToGlobal(start + (end - start) * k / 5)),
            Qt.MouseButton.NoButton,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
        )
        QApplication.sendEvent(vp, move)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=end)
    # The image point grabbed at `start` followed the mouse to `end`.
    grabbed_now = view.mapFromScene(center_before)
    assert abs(grabbed_now.x() - end.x()) <= 2 and abs(grabbed_now.y() - end.y()) <= 2
