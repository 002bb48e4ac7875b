"""SharedReads: the two sides of a batch compare read and decode each image once, within a
memory budget, on real image files."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.pipeline.shared_reads import SharedReads, common_min_side


def images(folder: Path, count: int, size: int = 64) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"img_{i}.png"
        cv2.imwrite(str(path), np.full((size, size, 3), i * 10, np.uint8))
        paths.append(path)
    return paths


def test_the_decode_size_suits_both_models() -> None:
    assert common_min_side([640, 256]) == 640
    assert common_min_side([640, None]) is None  # one of them needs the full image
    assert common_min_side([]) is None


def test_each_image_is_decoded_once_whichever_side_comes_first(tmp_path: Path) -> None:
    paths = images(tmp_path, 12)
    reads = SharedReads(("a", "b"), None)
    got: dict[str, dict[Path, object]] = {"a": {}, "b": {}}

    def side(name: str, order: list[Path]) -> None:
        read = reads.reader(name)
        for path in order:
            got[name][path] = read(path, 16)  # the job's own size is not used: the common one is

    threads = [
        threading.Thread(target=side, args=("a", paths)),
        threading.Thread(target=side, args=("b", paths[::-1])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert reads.reads == 12
    assert all(got["a"][p] is got["b"][p] for p in paths)  # the very same decoded image
    assert got["a"][paths[3]].image[0, 0, 0] == 30  # type: ignore[attr-defined]
    assert reads.kept_bytes == 0


def test_beyond_the_budget_the_slower_side_decodes_for_itself(tmp_path: Path) -> None:
    paths = images(tmp_path, 10)
    one = 64 * 64 * 3
    reads = SharedReads(("a", "b"), None, budget_bytes=3 * one)
    for path in paths:
        reads.read("a", path)
        assert reads.kept_bytes <= 3 * one  # never more than the budget waits for B
    for path in paths:
        reads.read("b", path)
    assert reads.reads == 10 + 7  # B found the first 3 kept, read the other 7 itself
    assert reads.kept_bytes == 0


def test_a_bad_file_fails_both_sides_with_the_same_message_after_one_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    reads = SharedReads(("a", "b"), None)
    messages = []
    for name in ("a", "b"):
        with pytest.raises(ValueError) as caught:
            reads.read(name, bad)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "bad.png" in messages[0]
    assert reads.reads == 1


def test_once_a_side_is_done_nothing_more_is_kept_for_it(tmp_path: Path) -> None:
    paths = images(tmp_path, 4)
    reads = SharedReads(("a", "b"), None)
    reads.read("a", paths[0])
    assert reads.kept_bytes > 0  # waiting for B
    reads.done("b")  # B's job ended (cancelled)
    assert reads.kept_bytes == 0
    for path in paths[1:]:
        reads.read("a", path)
    assert reads.kept_bytes == 0
    # The same path twice on one side (a file named twice) is read again, not taken twice.
    again = SharedReads(("a", "b"), None)
    first = again.read("a", paths[0])
    second = again.read("a", paths[0])
    assert again.reads == 2 and first is not second
