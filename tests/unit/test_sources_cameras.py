"""Camera discovery and source parsing."""

from __future__ import annotations

import glob
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.sources.cameras import list_cameras, parse_source


@pytest.mark.skipif(bool(glob.glob("/dev/video*")), reason="this machine has video devices")
def test_no_camera_gives_an_empty_list_quickly() -> None:
    t0 = time.monotonic()
    assert list_cameras() == []
    assert time.monotonic() - t0 < 3.0


@pytest.mark.parametrize(("text", "expected"), [("0", 0), (" 2 ", 2), ("10", 10)])
def test_digits_are_camera_indices(text: str, expected: int) -> None:
    assert parse_source(text) == expected


@pytest.mark.parametrize(
    "url",
    ["rtsp://cam.local:554/stream1", "RTSP://host/x", "http://host:8080/video.mjpg", "https://h/live.m3u8"],
)
def test_urls_are_kept_as_given(url: str) -> None:
    assert parse_source(url) == url


def test_existing_file_is_a_path(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"x")
    assert parse_source(str(video)) == str(video)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda tmp: str(tmp / "missing.mp4"),
            "neither a camera index, an existing",
        ),
        (lambda tmp: str(tmp), "is not a file"),
        (lambda tmp: "ftp://host/x.mp4", "unsupported URL scheme 'ftp'"),
        (lambda tmp: "  ", "empty source"),
        (lambda tmp: "-1", "neither a camera index"),
    ],
)
def test_anything_else_is_a_clear_value_error(
    tmp_path: Path, make: Callable[[Path], str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_source(make(tmp_path))
