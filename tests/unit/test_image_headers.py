"""Image sizes read from the file's header before decoding (JPEG, PNG, WebP, TIFF pages, BMP),
the same pixel limit as the session's, and JPEGs that cannot hold the image they announce:
refused with a message naming the file, before anything large is allocated."""

from __future__ import annotations

import resource
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from app.inference.core.request_path import MAX_INPUT_PIXELS
from app.sources.image_header import image_size, jpeg_damage, tiff_pages
from app.sources.images import MAX_IMAGE_PIXELS, read_image, read_image_for


def test_the_decode_limit_is_the_sessions() -> None:
    assert MAX_IMAGE_PIXELS == MAX_INPUT_PIXELS


def encoded(ext: str, image: np.ndarray, *params: int) -> bytes:
    ok, data = cv2.imencode(ext, image, list(params))
    assert ok
    return data.tobytes()


@pytest.mark.parametrize(
    ("ext", "params"),
    [
        (".jpg", ()),
        (".png", ()),
        (".webp", (cv2.IMWRITE_WEBP_QUALITY, 80)),  # lossy (VP8)
        (".webp", (cv2.IMWRITE_WEBP_QUALITY, 101)),  # lossless (VP8L)
        (".tif", ()),
        (".bmp", ()),
    ],
)
def test_sizes_from_headers(ext: str, params: tuple[int, ...]) -> None:
    image = np.zeros((37, 91, 3), np.uint8)
    assert image_size(encoded(ext, image, *params)) == (91, 37)


def test_webp_extended_and_tiff_pages(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (40 + i, 30 + 2 * i)) for i in range(3)]
    frames[0].save(tmp_path / "pages.tif", save_all=True, append_images=frames[1:])
    assert tiff_pages((tmp_path / "pages.tif").read_bytes()) == [(40, 30), (41, 32), (42, 34)]
    assert image_size((tmp_path / "pages.tif").read_bytes()) == (42, 34)  # the largest page
    same = [Image.new("RGB", (42, 34)) for _ in range(2)]
    same[0].save(tmp_path / "anim.webp", save_all=True, append_images=same[1:])  # VP8X
    assert image_size((tmp_path / "anim.webp").read_bytes()) == (42, 34)
    assert image_size(b"GIF89a" + b"\x00" * 40) is None  # not read: decoded then checked


def claims(data: bytes, width: int, height: int) -> bytes:
    """A real JPEG whose frame header is changed to announce width x height."""
    sof = next(i for i in range(2, len(data) - 1) if data[i] == 0xFF and data[i + 1] in (0xC0, 0xC2))
    return data[: sof + 5] + struct.pack(">HH", height, width) + data[sof + 9 :]


def photo_jpeg() -> bytes:
    rng = np.random.default_rng(1)
    return encoded(".jpg", rng.integers(0, 255, (240, 320, 3), dtype=np.uint8))


def test_a_jpeg_announcing_30000x30000_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.jpg"
    path.write_bytes(claims(photo_jpeg(), 30000, 30000))
    assert 40_000 < path.stat().st_size < 150_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match=r"huge\.jpg: too large: 30000 x 30000 = 900 MP; .* at most 64 MP"):
        read_image(path)
    # Decoded at 1/8 (3750 x 3750) it would fit, but its 60 KB cannot hold the image it
    # announces: never a grey picture reported as ok.
    with pytest.raises(ValueError, match=r"huge\.jpg: \d+ bytes of JPEG data cannot hold the 30000 x 30000"):
        read_image_for(path, 256)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100  # nothing the size of the announced image was allocated


def test_a_png_announcing_20000x20000_is_refused_from_its_header(tmp_path: Path) -> None:
    rows = zlib.compress(b"\x00" * (1 + 3 * 20000) * 4)  # four rows of it: the rest is missing
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    path = tmp_path / "wide.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    with pytest.raises(ValueError, match=r"wide\.png: too large: 20000 x 20000 = 400 MP"):
        read_image_for(path, 640)


def test_a_truncated_jpeg_says_so(tmp_path: Path) -> None:
    data = photo_jpeg()
    assert jpeg_damage(data) is None
    path = tmp_path / "cut.jpg"
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(ValueError, match=r"cut\.jpg: the JPEG data ends before the image does"):
        read_image(path)


def test_images_at_the_limit_still_decode_and_16_bit_is_rounded_as_before(tmp_path: Path) -> None:
    # A JPEG over the limit decoded at a reduced size is within it: read as before.
    big = tmp_path / "big.jpg"
    big.write_bytes(encoded(".jpg", np.full((9000, 8000, 3), 90, np.uint8)))  # 72 MP
    decoded = read_image_for(big, 640)
    assert (decoded.width, decoded.height) == (8000, 9000) and decoded.reduced
    with pytest.raises(ValueError, match="too large: 8000 x 9000 = 72 MP"):
        read_image_for(big, None)
    deep = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    path = tmp_path / "deep.png"
    cv2.imwrite(str(path), deep)
    assert np.array_equal(read_image(path)[..., 0], ((deep.astype(np.uint32) + 128) // 257).astype(np.uint8))
