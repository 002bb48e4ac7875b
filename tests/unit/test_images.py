"""Image conversion to RGB uint8, reading files, telling images by content."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources.images import read_image, to_rgb_uint8
from app.sources.sniff import is_image_file


def test_bgr_becomes_rgb_contiguous() -> None:
    bgr = np.zeros((4, 6, 3), np.uint8)
    bgr[..., 0] = 10  # blue
    bgr[..., 2] = 200  # red
    rgb = to_rgb_uint8(bgr[:, ::-1])  # a non-contiguous view on purpose
    assert rgb.shape == (4, 6, 3) and rgb.dtype == np.uint8 and rgb.flags["C_CONTIGUOUS"]
    assert rgb[0, 0].tolist() == [200, 0, 10]


@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 1)])
def test_gray_is_replicated(shape: tuple[int, ...]) -> None:
    gray = np.arange(35, dtype=np.uint8).reshape(shape)
    rgb = to_rgb_uint8(gray)
    assert rgb.shape == (5, 7, 3)
    assert (rgb[..., 0] == gray.reshape(5, 7)).all() and (rgb[..., 0] == rgb[..., 2]).all()


def test_bgra_drops_alpha() -> None:
    bgra = np.array([[[1, 2, 3, 0]]], np.uint8)
    assert to_rgb_uint8(bgra).tolist() == [[[3, 2, 1]]]


def test_16bit_and_float_scale_to_full_range() -> None:
    img16 = np.array([[0, 257, 65535, 32896]], np.uint16)
    assert to_rgb_uint8(img16)[0, :, 0].tolist() == [0, 1, 255, 128]
    f = np.array([[[0.0, 0.5, 1.0], [2.0, -1.0, np.nan]]], np.float32)  # BGR
    assert to_rgb_uint8(f).tolist() == [[[255, 128, 0], [0, 0, 255]]]


def test_bad_channels_and_shapes() -> None:
    with pytest.raises(ValueError, match="2 channels"):
        to_rgb_uint8(np.zeros((3, 3, 2), np.uint8))
    with pytest.raises(ValueError, match="shape"):
        to_rgb_uint8(np.zeros((3,), np.uint8))


def _write(path: Path, ext: str, image: np.ndarray) -> Path:
    ok, buf = cv2.imencode(ext, image)
    assert ok
    path.write_bytes(buf.tobytes())
    return path


@pytest.mark.parametrize("ext", [".png", ".jpg", ".bmp", ".tiff", ".webp", ".ppm", ".pgm"])
def test_formats_recognised_by_content_under_a_wrong_name(tmp_path: Path, ext: str) -> None:
    img = np.zeros((8, 8, 3), np.uint8) if ext != ".pgm" else np.zeros((8, 8), np.uint8)
    p = _write(tmp_path / "picture.txt", ext, img)
    assert is_image_file(p)
    assert read_image(p).shape == (8, 8, 3)


def test_text_named_jpg_is_not_an_image(tmp_path: Path) -> None:
    p = tmp_path / "photo.jpg"
    p.write_text("BM this is not a bitmap, just text\n")
    assert not is_image_file(p)
    with pytest.raises(ValueError, match=r"photo\.jpg: not an image"):
        read_image(p)


def test_gif_is_not_an_image_for_opencv(tmp_path: Path) -> None:
    p = tmp_path / "a.gif"
    p.write_bytes(bytes.fromhex("47494638396101000100800000000000ffffff2c00000000010001000002024401003b"))
    assert not is_image_file(p)


def test_read_image_png_16bit_and_bgra_to_rgb(tmp_path: Path) -> None:
    bgra = np.zeros((3, 4, 4), np.uint8)
    bgra[..., 0] = 255  # blue
    bgra[..., 3] = 128
    assert read_image(_write(tmp_path / "a.png", ".png", bgra))[0, 0].tolist() == [0, 0, 255]
    g16 = np.full((3, 4), 65535, np.uint16)
    assert read_image(_write(tmp_path / "b.png", ".png", g16))[0, 0].tolist() == [255, 255, 255]


def test_read_image_errors_name_file_and_cause(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nope\.png: file not found"):
        read_image(tmp_path / "nope.png")
    with pytest.raises(ValueError, match="is a folder"):
        read_image(tmp_path)
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.png: the file is empty"):
        read_image(empty)
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    with pytest.raises(ValueError, match=r"cut\.png: image data is corrupt"):
        read_image(truncated)
    assert not is_image_file(tmp_path / "nope.png") and not is_image_file(tmp_path)
