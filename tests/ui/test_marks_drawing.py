"""The evaluation's marks on the picture, through the one renderer: a labelled object dashed, a
false positive's box solid over the model's own, each tag under its box (over it at the
picture's bottom edge), at a constant size on screen whatever the zoom."""

from __future__ import annotations

import itertools

import numpy as np
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage
from pytestqt.qtbot import QtBot

from app.drawing.marks import MarkKind, MarkStyle, mark_shape
from app.inference.result import Detection
from app.ui.view.image_view import ImageView

STYLE = MarkStyle()


def _view(qtbot: QtBot) -> ImageView:
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(400, 300)
    grey = np.full((240, 320, 3), 128, np.uint8)
    view.set_image(grey, [Detection((180, 40, 280, 120), 0.7, 0, "face")])
    view.set_marks(
        [
            mark_shape(MarkKind.FOUND, (40, 40, 140, 120), "face"),
            mark_shape(MarkKind.FALSE_POSITIVE, (180, 40, 280, 120), "face"),
            mark_shape(MarkKind.MISSED, (40, 170, 140, 238), "face"),
        ]
    )
    view.show()
    qtbot.waitExposed(view)
    view.actual_size()
    return view


def _near(image: QImage, x: int, y: int, rgb: tuple[int, int, int], tol: int = 40) -> bool:
    c = QColor(image.pixel(x, y))
    return max(abs(c.red() - rgb[0]), abs(c.green() - rgb[1]), abs(c.blue() - rgb[2])) <= tol


def _runs(flags: list[bool]) -> int:
    return sum(1 for a, b in itertools.pairwise(flags) if a and not b)


def test_marks_are_dashed_or_solid_with_their_tags_placed(qtbot: QtBot) -> None:
    view = _view(qtbot)
    found, false, missed = view.mark_items()
    assert [m.text() for m in view.mark_items()] == ["labelled face", "false positive face", "missed face"]
    image = view.viewport().grab().toImage()

    def at(x: float, y: float) -> tuple[int, int]:
        p = view.mapFromScene(QPointF(x, y))
        return p.x(), p.y()

    # The top edge of each box, one pixel in (the outline is drawn inside the box).
    x1, y = at(40, 41)
    x2, _ = at(140, 41)
    dashed = [_near(image, x, y, STYLE.found) for x in range(x1 + 3, x2 - 3)]
    assert _runs(dashed) >= 3 and not all(dashed), "a labelled object is dashed"
    x1, y = at(180, 41)
    x2, _ = at(280, 41)
    assert all(_near(image, x, y, STYLE.false_positive) for x in range(x1, x2)), (
        "a false positive: solid, over the box"
    )
    # Tags (the padding row over the text): under the box; at the picture's bottom, over the
    # box's bottom edge instead (no room below).
    x, y = at(40, 120)
    assert _near(image, x + 20, y + 1, STYLE.found, 30) and not _near(image, x + 20, y - 6, STYLE.found, 30)
    x, y = at(40, 238)
    tag_top = y - found.label_item.boundingRect().height() + 2
    assert _near(image, x + 20, round(tag_top) + 1, STYLE.missed, 30)
    assert not _near(image, x + 20, y + 1, STYLE.missed, 30)
    # Constant size on screen: the tag is as tall at any zoom.
    before = found.label_item.deviceTransform(view.viewportTransform()).mapRect(
        found.label_item.boundingRect()
    )
    view.zoom_by(3.0)
    after = found.label_item.deviceTransform(view.viewportTransform()).mapRect(
        found.label_item.boundingRect()
    )
    assert abs(before.height() - after.height()) < 0.5
    # Replaced and cleared with the picture.
    view.set_marks([mark_shape(MarkKind.IGNORED, (10, 10, 30, 30), "face")])
    assert [m.shape_.kind for m in view.mark_items()] == [MarkKind.IGNORED]
    view.clear()
    assert view.mark_items() == [] and missed is not None and false is not None
