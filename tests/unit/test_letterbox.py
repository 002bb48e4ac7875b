"""Letterbox / resize / identity: geometry and the round trip of boxes."""

import numpy as np
import pytest

from app.inference.decoding.letterbox import clip_boxes, identity, letterbox, stretch_resize

SIZES = [(480, 640), (1080, 1920), (700, 300), (640, 640), (333, 517), (1, 999), (37, 41)]


def _marked(h: int, w: int, box: tuple[int, int, int, int]) -> np.ndarray:
    img = np.zeros((h, w, 3), np.uint8)
    x1, y1, x2, y2 = box
    img[y1:y2, x1:x2] = 255
    return img


def _bbox_of_white(img: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(img[..., 0] > 127)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


@pytest.mark.parametrize(("h", "w"), [s for s in SIZES if min(s) >= 30])
def test_letterbox_round_trip_of_a_drawn_box(h: int, w: int) -> None:
    box = (w // 4, h // 3, w // 4 + max(w // 3, 8), h // 3 + max(h // 3, 8))
    out, t = letterbox(_marked(h, w, box), (640, 640), 114)
    assert out.shape == (640, 640, 3)
    # Where the box landed in the model input, measured on the pixels, maps back within ~1 px.
    back = t.to_original(_bbox_of_white(out)[None])[0]
    assert np.allclose(back, box, atol=1.0 + 1.0 / t.scale)
    # The arithmetic (no pixel sampling) maps exactly: forward by hand, then back. Each axis
    # was resized to round(side * r): its own gain, as Ultralytics' scale_boxes uses.
    new_w, new_h = round(w * t.scale), round(h * t.scale)
    assert (t.gain_x, t.gain_y) == (new_w / w, new_h / h)
    fwd = np.array(box, np.float32)
    fwd[0::2] = fwd[0::2] * new_w / w + t.pad_left
    fwd[1::2] = fwd[1::2] * new_h / h + t.pad_top
    assert np.allclose(t.to_original(fwd[None])[0], box, atol=1e-3)


@pytest.mark.parametrize(("h", "w"), SIZES)
@pytest.mark.parametrize("size", [(640, 640), (384, 640), (320, 256)])
def test_letterbox_geometry_follows_ultralytics(h: int, w: int, size: tuple[int, int]) -> None:
    img = np.full((h, w, 3), 7, np.uint8)
    out, t = letterbox(img, size, 114)
    assert out.shape == (*size, 3)
    r = min(size[0] / h, size[1] / w)
    new_w, new_h = max(1, round(w * r)), max(1, round(h * r))
    assert t.scale == pytest.approx(r)
    assert t.pad_left == round((size[1] - new_w) / 2 - 0.1)
    assert t.pad_top == round((size[0] - new_h) / 2 - 0.1)
    # Image content occupies exactly [pad_left, pad_left + new_w) x [pad_top, pad_top + new_h).
    content = np.argwhere(out[..., 0] == 7)
    assert content[:, 0].min() == t.pad_top and content[:, 0].max() == t.pad_top + new_h - 1
    assert content[:, 1].min() == t.pad_left and content[:, 1].max() == t.pad_left + new_w - 1
    assert np.count_nonzero(out[..., 0] == 114) == size[0] * size[1] - new_w * new_h


def test_letterbox_odd_padding_puts_extra_pixel_right() -> None:
    # 640x639 into 640x640: new width 639, one pixel of padding, Ultralytics puts it on the right.
    out, t = letterbox(np.full((640, 639, 3), 7, np.uint8), (640, 640), 114)
    assert t.pad_left == 0 and out[0, 639, 0] == 114 and out[0, 0, 0] == 7


def test_letterbox_pad_value_and_gray() -> None:
    out, _ = letterbox(np.zeros((100, 200), np.uint8), (64, 64), 0)
    assert out.shape == (64, 64)
    out, _ = letterbox(np.zeros((100, 200, 3), np.uint8), (64, 64), 50)
    assert out[0, 0].tolist() == [50, 50, 50]


def test_to_original_clips_to_the_image() -> None:
    _, t = letterbox(np.zeros((480, 640, 3), np.uint8), (640, 640))
    # pad_top is 80: y in 0..80 is padding above the image.
    back = t.to_original(np.array([[-10, 0, 700, 640]], np.float32))
    assert back.tolist() == [[0, 0, 640, 480]]


def test_stretch_resize_round_trip() -> None:
    img = _marked(300, 900, (90, 30, 450, 150))
    out, t = stretch_resize(img, (320, 320))
    assert out.shape == (320, 320, 3)
    assert (t.scale_x, t.scale_y) == (pytest.approx(320 / 900), pytest.approx(320 / 300))
    back = t.to_original(_bbox_of_white(out)[None])[0]
    assert np.allclose(back, [90, 30, 450, 150], atol=1 / t.scale_x + 1)


def test_identity_and_clip() -> None:
    img = np.zeros((10, 20, 3), np.uint8)
    out, t = identity(img)
    assert out is img and (t.dst_w, t.dst_h) == (20, 10)
    assert t.to_original(np.array([[-1, 2, 25, 11]])).tolist() == [[0, 2, 20, 10]]
    assert clip_boxes(np.zeros((0, 4)), 5, 5).shape == (0, 4)


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="shape"):
        letterbox(np.zeros((0, 5, 3), np.uint8), (640, 640))
    with pytest.raises(ValueError, match="input size"):
        letterbox(np.zeros((5, 5, 3), np.uint8), (0, 640))
