"""VideoFileReader: every frame, in order, RGB, with clear errors and a clean release."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources.video_file import VideoFileReader
from tests.media import decode_index, make_face_video, make_index_video


@pytest.mark.parametrize("suffix", [".mp4", ".avi"])
def test_every_frame_is_read_in_order(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"index{suffix}"
    make_index_video(path, frames=75, fps=25, size=(160, 120))
    with VideoFileReader(path) as reader:
        assert reader.frame_count == 75
        assert reader.fps == pytest.approx(25, abs=0.1)
        assert reader.size == (160, 120)
        frames = list(reader)
    assert [f.index for f in frames] == list(range(75))
    assert [decode_index(f.image) for f in frames] == list(range(75))
    assert all(f.source == str(path) for f in frames)
    assert all(f.pts_ms is not None for f in frames)
    pts = [f.pts_ms or 0.0 for f in frames]
    assert pts == sorted(pts) and pts[-1] == pytest.approx(74 * 40, abs=41)
    image = frames[0].image
    assert image.dtype == np.uint8 and image.shape == (120, 160, 3) and image.flags.c_contiguous


def test_frames_are_rgb(tmp_path: Path) -> None:
    path = tmp_path / "red.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), 10.0, (64, 48))
    for _ in range(3):
        writer.write(np.full((48, 64, 3), (0, 0, 255), np.uint8))  # BGR red
    writer.release()
    with VideoFileReader(path) as reader:
        frame = next(iter(reader))
    r, g, b = frame.image[24, 32]
    assert r > 200 and g < 60 and b < 60


def test_missing_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mp4"
    with pytest.raises(ValueError, match=r"cannot open video file .*missing\.mp4: no such file"):
        VideoFileReader(missing)


def test_undecodable_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.mp4"
    bogus.write_bytes(b"\x00\x00\x00\x18ftypisom" + b"garbage" * 100)
    with pytest.raises(ValueError, match=r"cannot open video file .*bogus\.mp4"):
        VideoFileReader(bogus)


def test_break_then_close_releases_and_stops_iteration(tmp_path: Path) -> None:
    path = tmp_path / "index.mp4"
    make_index_video(path, frames=20, fps=30, size=(64, 48))
    reader = VideoFileReader(path)
    taken = []
    for frame in reader:
        taken.append(frame.index)
        if frame.index == 4:
            break
    reader.close()
    reader.close()  # idempotent
    assert taken == [0, 1, 2, 3, 4]
    assert list(reader) == []
    assert reader.frames_read == 5


def test_close_from_another_thread_lets_the_reader_release(tmp_path: Path) -> None:
    path = tmp_path / "index.mp4"
    make_index_video(path, frames=50, fps=30, size=(64, 48))
    reader = VideoFileReader(path)
    iterator = iter(reader)
    next(iterator)  # now this thread is the reader
    closer = threading.Thread(target=reader.close)
    closer.start()
    closer.join()
    # close() from another thread only asked: the capture is still ours until the next step.
    assert not reader.released
    assert list(iterator) == []
    assert reader.released


def test_face_video_helper_returns_one_position_per_frame(tmp_path: Path) -> None:
    path = tmp_path / "face.mp4"
    positions = make_face_video(path, frames=30, fps=30, size=(320, 240))
    assert len(positions) == 30
    assert positions[0][0] < positions[15][0] < positions[-1][0]  # moves left to right
    with VideoFileReader(path) as reader:
        frames = list(reader)
    assert len(frames) == 30
    # The pasted head differs from the plain background where the positions say it is.
    x, y = positions[10]
    image = frames[10].image.astype(int)
    assert np.abs(image[y + 40, x + 40] - image[5, 5]).sum() > 60
