"""One renderer: the view (at 1:1), the PNG export and the recorded video draw the same result
(boxes, instance and semantic masks, keypoints with their skeleton, top-k classes) to the same
pixels.

Tolerance: none. All three paint the same draw list (app/drawing) through the same QPainter
backend (app/ui/view/painter.py) onto Qt's raster engine, with geometry mapped to device pixels
and snapped the same way and every render hint set per primitive, so anti-aliasing lands on the
same pixels too. A 320x240 picture is below the size where pictures saved at their own size
draw larger (`picture_scale`), so all three share one scale. The video file itself is lossy
(its codec), so the decoded frame is only checked to be that picture, not bit for bit.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage
from pytestqt.qtbot import QtBot

from app.drawing.draw_list import detection_shape
from app.drawing.style import picture_scale
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, SemanticMask
from app.pipeline.recording import LiveRecording
from app.sources.frame import Frame
from app.sources.video_file import VideoFileReader
from app.ui.batch.export import save_annotated_png
from app.ui.view.image_view import ImageView
from app.ui.view.painter import render_rgb_in_place, text_layout

W, H = 320, 240
SKELETON = ((0, 1), (0, 2), (2, 3))


def _image() -> np.ndarray:
    img = np.zeros((H, W, 3), np.uint8)
    img[..., 0] = np.linspace(0, 255, W, dtype=np.uint8)[None, :]
    img[..., 1] = np.linspace(0, 255, H, dtype=np.uint8)[:, None]
    img[..., 2] = 60
    return img


def _mask(x1: int, y1: int, x2: int, y2: int) -> BinaryMask:
    full = np.zeros((H, W), bool)
    full[y1:y2, x1:x2] = True
    return BinaryMask.from_full(full)


# The fourth keypoint scores below the visible score: neither it nor the edge (2, 3) is drawn.
KEYPOINTS = ((60.0, 60.0, 0.9), (100.0, 62.3, 0.8), (80.5, 110.2, 0.95), (130.0, 170.0, 0.2))
DETECTIONS = [
    Detection((30.4, 40.6, 140.2, 180.7), 0.93, 0, "person", KEYPOINTS, _mask(50, 70, 120, 160)),
    Detection((200, 2, 300, 90), 0.61, 3, "cat", None, _mask(210, 10, 290, 80)),  # no room above
    Detection((250, 150, 319.6, 240), 0.4, 5, "a long label at the right edge"),
]
SEMANTIC = [SemanticMask(2, "road", _mask(0, 200, W, H))]
CLASSES = [ClassScore(1, "tabby", 0.91), ClassScore(2, "tiger cat", 0.05)]


def _array(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : image.width() * 3].reshape(image.height(), image.width(), 3).copy()


def _view(qtbot: QtBot, dots: bool) -> ImageView:
    view = ImageView()
    qtbot.addWidget(view)
    view.resize(W + 180, H + 160)  # room around the picture: nothing drawn is cut at the edges
    view.set_keypoint_style(SKELETON, ("nose", "eye", "chin", "hand"), dots=dots)
    view.set_mask_opacity(0.4)
    view.set_image(_image(), DETECTIONS, SEMANTIC, CLASSES)
    view.show()
    qtbot.waitExposed(view)
    return view


def _on_screen(view: ImageView) -> np.ndarray:
    """The viewport's pixels, as the window shows them."""
    return _array(view.viewport().grab().toImage())


def _picture_in_view(view: ImageView) -> np.ndarray:
    origin = view.mapFromScene(QPointF(0, 0))
    return _on_screen(view)[origin.y() : origin.y() + H, origin.x() : origin.x() + W]


def _differences(a: np.ndarray, b: np.ndarray) -> str:
    ys, xs = np.nonzero(np.abs(a.astype(int) - b.astype(int)).max(axis=2))
    return f"{len(ys)} pixels differ, e.g. at {list(zip(xs[:5].tolist(), ys[:5].tolist(), strict=True))}"


@pytest.mark.parametrize("dots", [True, False], ids=["dots", "edges-only"])
def test_view_png_and_video_draw_the_same_pixels(qtbot: QtBot, tmp_path: Path, dots: bool) -> None:
    view = _view(qtbot, dots)
    view.actual_size()
    assert view.zoom_factor() == 1.0 and picture_scale(W, H) == 1.0  # one scale for all three
    style = view.overlay_style()
    shown = _picture_in_view(view)

    png = tmp_path / "annotated.png"
    save_annotated_png(png, _image(), DETECTIONS, SEMANTIC, CLASSES, style)
    exported = _array(QImage(str(png)))

    recording = LiveRecording(paint=render_rgb_in_place)
    recorded = recording.annotated(_image(), DETECTIONS, SEMANTIC, CLASSES, style)

    assert np.array_equal(shown, exported), f"view vs PNG: {_differences(shown, exported)}"
    assert np.array_equal(exported, recorded), f"PNG vs video: {_differences(exported, recorded)}"

    # Something was drawn at all, and the style's choices are in it.
    raw = _image()
    person = detection_shape(DETECTIONS[0], style)
    assert tuple(exported[41, 80]) == person.outline.color  # the box's top edge (rounded to row 41)
    assert not np.array_equal(exported[100, 80], raw[100, 80])  # the instance mask
    assert tuple(exported[170, 130]) == tuple(raw[170, 130])  # the hidden keypoint: no dot, no edge
    ring = exported[56, 60].astype(int)  # over the first point, where its dot's white outline passes
    assert bool(ring.min() > 200) == dots, ring  # dots drawn, or only the edges (face-mesh style)
    assert np.abs(exported[61, 80].astype(int) - person.outline.color).max() < 60  # edge (0, 1)


def test_the_recorded_video_holds_that_picture(qtbot: QtBot, tmp_path: Path) -> None:
    """Through the recorder's own thread (QPainter off the GUI thread) into the file."""
    view = _view(qtbot, True)
    style = view.overlay_style()
    recording = LiveRecording(paint=render_rgb_in_place)
    expected = recording.annotated(_image(), DETECTIONS, SEMANTIC, CLASSES, style)
    video = tmp_path / "annotated.avi"
    recording.start(video, fps=10)
    t0 = time.monotonic()
    for i in range(3):
        recording.write(Frame(i, _image(), "cam", t0 + i / 10), DETECTIONS, SEMANTIC, CLASSES, style)
    summary = recording.stop()
    assert summary is not None and summary.ok, summary
    with VideoFileReader(video) as reader:
        decoded = next(iter(reader)).image.astype(int)
    to_expected = np.abs(decoded - expected).mean()
    to_raw = np.abs(decoded - _image().astype(int)).mean()
    assert to_expected < 4 and to_raw > 3 * to_expected, (to_expected, to_raw)


def test_labels_and_lines_keep_their_screen_size_when_zoomed(qtbot: QtBot) -> None:
    """Zoomed in 2x, the view's tag is the PNG's tag pixel for pixel (screen-pixel sizes), on
    the box's corner where it now lands; the outline is as many screen pixels wide as at 1:1."""
    view = _view(qtbot, True)
    view.actual_size()
    style = view.overlay_style()
    cat = detection_shape(DETECTIONS[1], style)  # its tag is inside the box: no room above
    layout = text_layout(cat.tag)
    recorded = LiveRecording(paint=render_rgb_in_place).annotated(
        _image(), DETECTIONS, SEMANTIC, CLASSES, style
    )
    x, y = round(cat.tag.anchor[0]), round(cat.tag.anchor[1])
    tag_at_1x = recorded[y : y + layout.height, x : x + layout.width]
    assert tuple(tag_at_1x[0, 0]) == cat.outline.color  # the tag's background, in the box's corner

    view.zoom_by(2.0)
    view.centerOn(QPointF(*cat.tag.anchor))
    assert view.zoom_factor() == 2.0
    corner = view.viewportTransform().map(QPointF(*cat.tag.anchor))
    cx, cy = round(corner.x()), round(corner.y())  # the painter rounds to whole device pixels
    screen = _on_screen(view)
    tag_at_2x = screen[cy : cy + layout.height, cx : cx + layout.width]
    assert np.array_equal(tag_at_2x, tag_at_1x), _differences(tag_at_2x, tag_at_1x)
    # Down the box's left edge: box_width pixels of its colour, then the picture inside.
    row = round(view.viewportTransform().map(QPointF(200, 60)).y())
    width = round(style.box_width)
    assert all(tuple(screen[row, cx + i]) == cat.outline.color for i in range(width))
    assert tuple(screen[row, cx + width]) != cat.outline.color
