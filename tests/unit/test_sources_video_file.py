"""VideoFileReader: every frame, in order, RGB, with clear errors and a clean release."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.sources.frame import Frame
from app.sources.stream_sizes import h264_sps_size, packet_size
from app.sources.video_file import FrameFailure, VideoFileReader
from tests.media import decode_index, make_face_video, make_index_video, make_size_changing_video


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


def test_frames_after_a_size_change_are_failures_never_stale_pictures(tmp_path: Path) -> None:
    # OpenCV keeps decoding at the first size: after the change it hands back its last picture
    # (frame 9) for every frame. Those frames are failures naming the change, not frames.
    path = make_size_changing_video(tmp_path / "changes.ts", ((320, 240), (640, 360), (320, 240)))
    with VideoFileReader(path) as reader:
        items = list(reader.items())
    frames = [i for i in items if isinstance(i, Frame)]
    failures = [i for i in items if isinstance(i, FrameFailure)]
    # (The decoder may keep the last frames or two of the joined stream to itself.)
    assert [f.index for f in frames][:12] == [*range(10), 20, 21] and len(frames) >= 16
    assert all(f.image.shape == (240, 320, 3) for f in frames)
    assert {int(f.image.mean()) // 60 for f in frames if f.index >= 20} == {2}  # the third part's grey
    assert [f.index for f in failures] == list(range(10, 20))
    assert (
        "frame 12: the video's frame size changed from 320 x 240 to 640 x 360 at frame 10"
        in failures[2].error
    )
    with VideoFileReader(path) as reader:  # plain iteration: the frames that could be read
        assert [f.index for f in reader] == [f.index for f in frames]


def test_frame_sizes_from_the_bitstream() -> None:
    # A 1080p H.264 sequence parameter set (x264, High profile, with cropping 1088 -> 1080).
    sps = bytes.fromhex("67640028acd94078 0227e5c044000003 0004000003 00f03c60c658".replace(" ", ""))
    assert h264_sps_size(sps) == (1920, 1080)
    assert packet_size(b"\x00\x00\x00\x01" + sps + b"\x00\x00\x01\x65\x88", "H264") == (1920, 1080)
    assert packet_size(len(sps).to_bytes(4, "big") + sps, "AVC1") == (1920, 1080)  # length-prefixed


@pytest.mark.parametrize(("fourcc", "suffix"), [("mp4v", ".avi"), ("MJPG", ".avi"), ("VP80", ".webm")])
def test_frame_sizes_of_the_codecs_opencv_writes(tmp_path: Path, fourcc: str, suffix: str) -> None:
    path = tmp_path / f"v{suffix}"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*fourcc), 10, (96, 64))
    for _ in range(3):
        writer.write(np.zeros((64, 96, 3), np.uint8))
    writer.release()
    capture = cv2.VideoCapture(str(path))
    codec = int(capture.get(cv2.CAP_PROP_FOURCC)).to_bytes(4, "little").decode().upper()
    assert capture.set(cv2.CAP_PROP_FORMAT, -1)
    ok, packet = capture.read()
    capture.release()
    assert ok and packet_size(packet.tobytes(), codec) == (96, 64)
