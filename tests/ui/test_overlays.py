"""Masks, keypoints and top-k classes in the image view, the opacity slider, the classes
panel, the PNG and COCO exports: rendered pixels checked where the overlays must be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from pytestqt.qtbot import QtBot

from app.drawing.style import AnnotationStyle, class_rgb
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, SemanticMask
from app.pipeline.recording import LiveRecording
from app.ui.batch.export import save_annotated_png
from app.ui.main_window import MainWindow
from app.ui.view.image_view import ImageView
from app.ui.view.painter import render_rgb_in_place

W, H = 200, 120


def _gray() -> np.ndarray:
    return np.full((H, W, 3), 100, np.uint8)


def _mask(x1: int, y1: int, x2: int, y2: int) -> BinaryMask:
    full = np.zeros((H, W), bool)
    full[y1:y2, x1:x2] = True
    return BinaryMask.from_full(full)


def _render(view: ImageView) -> QImage:
    """The scene at one image pixel per output pixel (what the overlays put on the image)."""
    out = QImage(W, H, QImage.Format.Format_RGB32)
    out.fill(QColor(0, 0, 0))
    painter = QPainter(out)
    view.scene().render(painter, QRectF(0, 0, W, H), QRectF(0, 0, W, H))
    painter.end()
    return out


def _rgb(image: QImage, x: int, y: int) -> tuple[int, int, int]:
    c = image.pixelColor(x, y)
    return c.red(), c.green(), c.blue()


def _view(qtbot: QtBot) -> ImageView:
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_instance_mask_fill_follows_the_opacity(qtbot: QtBot) -> None:
    view = _view(qtbot)
    det = Detection((20, 10, 120, 90), 0.9, 3, "thing", mask=_mask(40, 20, 100, 80))
    view.set_image(_gray(), [det])
    (item,) = view.mask_items()
    assert (item.pos().x(), item.pos().y()) == (40, 20)
    color = class_rgb(3)
    for opacity in (1.0, 0.5, 0.0):
        view.set_mask_opacity(opacity)
        image = _render(view)
        inside, outside = _rgb(image, 70, 50), _rgb(image, 30, 50)  # both inside the box
        want = tuple(round(100 + (c - 100) * opacity) for c in color)
        assert all(abs(a - b) <= 2 for a, b in zip(inside, want, strict=True)), (opacity, inside, want)
        assert outside == (100, 100, 100)


def test_keypoints_drawn_where_visible_with_the_skeleton(qtbot: QtBot) -> None:
    view = _view(qtbot)
    view.set_keypoint_style([(0, 1), (1, 2)], ["a", "b", "c"])
    kpts = ((30.0, 30.0, 0.9), (150.0, 30.0, 0.8), (150.0, 100.0, 0.1))
    view.set_image(_gray(), [Detection((10, 10, 190, 110), 0.9, 1, "p", keypoints=kpts)])
    (item,) = view.keypoint_items()
    assert [(p.x(), p.y()) for p in item.visible_points()] == [(30, 30), (150, 30)]
    assert item.lines == [(0, 1)]  # the line to the hidden third point is not drawn
    assert "a: (30, 30) 0.90" in item.toolTip() and "c: (150, 100) 0.10" in item.toolTip()
    view.fit()
    image = view.grab().toImage()
    color = class_rgb(1)
    for x, y in ((30, 30), (150, 30), (90, 30)):  # two dots and the middle of their line
        p = view.mapFromScene(x, y)
        got = _rgb(image, p.x(), p.y())
        assert all(abs(a - b) <= 40 for a, b in zip(got, color, strict=True)), ((x, y), got)
    hidden = view.mapFromScene(150, 100)
    assert _rgb(image, hidden.x(), hidden.y()) == (100, 100, 100)


def test_semantic_masks_and_classes_panel_through_the_window(qtbot: QtBot) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    view = window.view
    sem = [SemanticMask(2, "road", _mask(0, 60, W, H))]
    classes = [ClassScore(7, "cat", 0.9), ClassScore(3, "dog", 0.05)]
    view.set_image(_gray(), [], sem, classes)
    assert [m.mask for m in view.mask_items()] == [sem[0].mask]
    item = view.classes_item()
    assert item is not None and item.lines == ["cat  0.90", "dog  0.05"]
    assert window.classes_panel.rows() == [("cat", "0.900"), ("dog", "0.050")]
    assert not window.classes_panel.isHidden()
    # The window's opacity slider drives the view.
    window.thresholds.opacity_slider().setValue(20)
    assert view.mask_opacity() == 0.2 and view.mask_items()[0].opacity() == 0.2
    image = _render(view)
    road = class_rgb(2)
    assert _rgb(image, 10, 100) != (100, 100, 100) and _rgb(image, 150, 50) == (100, 100, 100)
    assert abs(_rgb(image, 10, 100)[0] - round(100 + (road[0] - 100) * 0.2)) <= 2
    # A result without them clears both.
    view.set_image(_gray(), [])
    assert view.mask_items() == [] and view.classes_item() is None
    assert window.classes_panel.isHidden()


def test_png_export_draws_masks_keypoints_and_classes(qtbot: QtBot, tmp_path: Path) -> None:
    det = Detection((20, 10, 120, 90), 0.9, 3, "thing", ((60.0, 50.0, 0.9),), _mask(40, 20, 100, 80))
    sem = [SemanticMask(5, "sky", _mask(150, 0, W, 40))]
    path = tmp_path / "out.png"
    save_annotated_png(
        path, _gray(), [det], sem, [ClassScore(0, "cat", 0.9)], AnnotationStyle(mask_opacity=1.0)
    )
    out = QImage(str(path))
    assert _rgb(out, 80, 70) == class_rgb(3)  # the instance mask, opaque
    assert _rgb(out, 190, 30) == class_rgb(5)  # the semantic mask
    assert _rgb(out, 60, 50) == class_rgb(3) or _rgb(out, 60, 50) == (255, 255, 255)  # the dot
    assert _rgb(out, 140, 100) == (100, 100, 100)  # nothing there
    assert _rgb(out, 2, 2) != (100, 100, 100)  # the classes table in the corner


def test_recorded_frames_show_masks_and_keypoints() -> None:
    det = Detection(
        (20, 10, 120, 90), 0.9, 3, "thing", ((60.0, 50.0, 0.9), (70.0, 50.0, 0.1)), _mask(40, 20, 100, 80)
    )
    out = LiveRecording(paint=render_rgb_in_place).annotated(_gray(), [det], style=AnnotationStyle())
    color = class_rgb(3)
    half = [(100 + c) / 2 for c in color]
    assert all(abs(int(a) - b) <= 1 for a, b in zip(out[70, 90], half, strict=True))  # half-opaque mask
    assert tuple(out[50, 60]) == color  # a visible keypoint
    assert all(abs(int(a) - b) <= 1 for a, b in zip(out[50, 70], half, strict=True))  # hidden: only the mask
    assert tuple(out[100, 150]) == (100, 100, 100)
