"""Input expansion: files and folders, recursive and sorted, media told by content not name."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources.files import InputItem, expand_inputs
from app.sources.sniff import looks_like_video
from tests.media import make_index_video


def _png(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, data = cv2.imencode(".png", np.full((8, 8, 3), 128, np.uint8))
    assert ok
    path.write_bytes(data.tobytes())
    return path


def _jpeg(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, data = cv2.imencode(".jpg", np.full((8, 8, 3), 64, np.uint8))
    assert ok
    path.write_bytes(data.tobytes())
    return path


def test_folder_is_expanded_recursively_in_sorted_order(tmp_path: Path) -> None:
    _png(tmp_path / "b.png")
    _png(tmp_path / "a" / "z.png")
    _jpeg(tmp_path / "a" / "deeper" / "x.jpg")
    _png(tmp_path / "c" / "1.png")
    items = list(expand_inputs([tmp_path]))
    assert [item.path.relative_to(tmp_path).as_posix() for item in items] == [
        "a/deeper/x.jpg",
        "a/z.png",
        "b.png",
        "c/1.png",
    ]
    assert all(item.kind == "image" and item.error is None for item in items)


def test_image_with_wrong_extension_is_found_by_content(tmp_path: Path) -> None:
    _png(tmp_path / "photo.dat")
    _jpeg(tmp_path / "noext")
    items = list(expand_inputs([tmp_path]))
    assert [(i.path.name, i.kind) for i in items] == [("noext", "image"), ("photo.dat", "image")]


def test_inside_a_folder_every_entry_is_an_item(tmp_path: Path) -> None:
    (tmp_path / "fake.jpg").write_text("not an image at all")
    (tmp_path / "notes.txt").write_text("hello")
    real = _png(tmp_path / "real.png")
    items = list(expand_inputs([tmp_path]))
    assert [(i.path.name, i.kind) for i in items] == [
        ("fake.jpg", "failed"),  # named like an image: meant to be one, so a failure
        ("notes.txt", "skipped"),  # not media by name or content
        ("real.png", "image"),
    ]
    assert items[2] == InputItem(real, "image", None)
    assert items[0].error is not None and "neither an image nor a video" in items[0].error
    assert items[1].error is not None and str(tmp_path / "notes.txt") in items[1].error


def test_text_given_explicitly_is_a_failure_with_path_and_cause(tmp_path: Path) -> None:
    fake = tmp_path / "fake.txt"
    fake.write_text("not an image at all")
    [item] = expand_inputs([fake])
    assert item.kind == "failed"
    assert item.error is not None
    assert str(fake) in item.error and "neither an image nor a video" in item.error


def test_missing_path_is_invalid_and_the_others_still_come(tmp_path: Path) -> None:
    missing = tmp_path / "nope.png"
    good = _png(tmp_path / "ok.png")
    items = list(expand_inputs([missing, str(good)]))
    assert items[0].kind == "failed" and items[0].path == missing
    assert (
        items[0].error is not None and str(missing) in items[0].error and "does not exist" in items[0].error
    )
    assert items[1] == InputItem(good, "image", None)


def test_empty_file_given_explicitly_is_invalid(tmp_path: Path) -> None:
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    [item] = expand_inputs([empty])
    assert item.kind == "failed" and item.error is not None and "empty" in item.error


def test_folder_without_media_is_reported(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("x")
    skipped, folder = expand_inputs([tmp_path])
    assert skipped.kind == "skipped" and skipped.path.name == "readme.txt"
    assert folder.kind == "failed" and folder.error is not None and str(tmp_path) in folder.error


@pytest.mark.parametrize("suffix", [".mp4", ".avi"])
def test_video_is_recognised_by_content_whatever_its_name(tmp_path: Path, suffix: str) -> None:
    video = tmp_path / f"clip{suffix}"
    make_index_video(video, frames=3, fps=10, size=(64, 48))
    renamed = video.rename(tmp_path / "clip.bin")
    _png(tmp_path / "still.png")
    items = list(expand_inputs([tmp_path]))
    assert [(i.path.name, i.kind) for i in items] == [("clip.bin", "video"), ("still.png", "image")]
    assert list(expand_inputs([renamed])) == [InputItem(renamed, "video", None)]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\x1a\x45\xdf\xa3" + b"\x00" * 40, True),  # Matroska / WebM
        (b"\x00\x00\x00\x18ftypisom" + b"\x00" * 40, True),  # MP4
        (b"\x00\x00\x00\x14ftypqt  " + b"\x00" * 40, True),  # QuickTime
        (b"\x00\x00\x00\x18ftypheic" + b"\x00" * 40, False),  # HEIF still image
        (b"RIFF\x00\x00\x00\x00AVI LIST", True),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", False),
        ((b"\x47" + b"\x00" * 187) * 3, True),  # MPEG-TS, two sync bytes 188 apart
        (b"\x47" + b"\x00" * 400, False),  # one 'G' is not a transport stream
        (b"hello world" * 50, False),
    ],
)
def test_video_magic(head: bytes, expected: bool) -> None:
    assert looks_like_video(head) is expected


def test_a_folder_1500_levels_deep_is_walked_and_every_entry_accounted(tmp_path: Path) -> None:
    # Nested generators stopped at Python's recursion limit: nothing was listed, not even
    # the top-level image. The walk is iterative now; the order stays depth first, sorted.
    deepest = tmp_path
    for _ in range(1500):  # (pathlib's mkdir(parents=True) recurses too)
        deepest = deepest / "d"
        deepest.mkdir()
    _png(tmp_path / "top.png")
    _png(deepest / "bottom.png")
    _png(tmp_path / "d" / "second.png")
    (deepest / "notes.txt").write_text("not media")
    (deepest / "loop").symlink_to(deepest / "loop")  # a link to itself
    (deepest / "up").symlink_to(tmp_path, target_is_directory=True)  # a cycle if followed
    try:
        items = list(expand_inputs([tmp_path]))
    finally:
        _remove_upwards(deepest, tmp_path)  # pytest's clean-up (shutil.rmtree) recurses: not here
    by_name = {item.path.name: item for item in items}
    assert [item.path.name for item in items] == [
        "bottom.png",
        "loop",
        "notes.txt",
        "up",
        "second.png",
        "top.png",
    ]
    assert [by_name[n].kind for n in ("bottom.png", "second.png", "top.png")] == ["image"] * 3
    assert by_name["loop"].kind == "skipped" and "symbolic link loop" in str(by_name["loop"].error)
    assert by_name["up"].kind == "skipped" and "not followed" in str(by_name["up"].error)
    assert by_name["notes.txt"].kind == "skipped"


def _remove_upwards(deepest: Path, top: Path) -> None:
    """Remove a deep chain of folders (and the files beside it) from the bottom up, iteratively."""
    level = deepest
    while level != top:
        for child in level.iterdir():
            if child.is_symlink() or not child.is_dir():
                child.unlink()
        level.rmdir()
        level = level.parent
