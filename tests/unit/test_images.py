"""Image conversion to RGB uint8, reading files, telling images by content."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources.images import jpeg_size, read_image, read_image_for, reduction_factor, to_rgb_uint8
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
    with pytest.raises(ValueError, match=r"nope\.png: not found"):
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


def test_a_jpeg_is_decoded_no_bigger_than_needed(tmp_path: Path) -> None:
    rgb = np.zeros((1080, 1920, 3), np.uint8)
    rgb[:, :, 0] = np.linspace(0, 255, 1920, dtype=np.uint8)[None, :]
    path = tmp_path / "wide.jpg"
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    assert jpeg_size(path.read_bytes()) == (1920, 1080)
    half = read_image_for(path, 512)
    assert half.image.shape == (540, 960, 3) and (half.width, half.height) == (1920, 1080) and half.reduced
    assert abs(int(half.image[270, 480, 0]) - int(rgb[540, 960, 0])) < 6  # the same picture, smaller
    eighth = read_image_for(path, 100)
    assert eighth.image.shape == (135, 240, 3)
    full = read_image_for(path, None)
    assert full.image.shape == (1080, 1920, 3) and not full.reduced
    assert read_image_for(path, 1500).image.shape == (1080, 1920, 3)  # 960 would be too small


def test_reduced_decoding_is_for_jpegs_only(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    cv2.imwrite(str(path), np.zeros((1000, 1200, 3), np.uint8))
    decoded = read_image_for(path, 200)
    assert decoded.image.shape == (1000, 1200, 3) and not decoded.reduced
    assert jpeg_size(path.read_bytes()) is None


def test_an_exif_rotated_jpeg_reports_its_displayed_size(tmp_path: Path) -> None:
    # A 200x100 (w x h) JPEG whose EXIF says "rotate 90": OpenCV shows it 100x200.
    ok, data = cv2.imencode(".jpg", np.zeros((100, 200, 3), np.uint8))
    assert ok
    exif = (
        b"\xff\xe1\x00\x22Exif\x00\x00II*\x00\x08\x00\x00\x00\x01\x00"
        b"\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00"
    )
    path = tmp_path / "rotated.jpg"
    path.write_bytes(data.tobytes()[:2] + exif + data.tobytes()[2:])
    full = read_image_for(path, None)
    half = read_image_for(path, 100)
    assert full.image.shape[:2] == (200, 100)
    assert (half.width, half.height) == (full.width, full.height) == (100, 200)
    assert half.image.shape[:2] == (100, 50)


@pytest.mark.parametrize(
    ("side", "needed", "factor"),
    [(1920, 256, 4), (1920, 512, 2), (640, 256, 2), (640, 512, 1), (8000, 100, 8)],
)
def test_reduction_factor(side: int, needed: int, factor: int) -> None:
    assert reduction_factor(side, needed) == factor
