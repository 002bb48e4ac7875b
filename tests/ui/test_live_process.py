"""`python -m app --camera SOURCE --screenshot FILE` as a process."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from app.server.embedded import EmbeddedServer
from tests.media import make_face_video
from tests.ui.test_viewer_process import run_viewer

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_camera_screenshot_after_30_annotated_frames(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "face.mp4"
    make_face_video(video, frames=120, fps=30)
    out = tmp_path / "live.png"
    proc = run_viewer(tmp_path, "--url", triton.grpc_url, "--camera", str(video), "--screenshot", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 800
    assert out.stat().st_size > 20_000


def test_camera_screenshot_of_a_file_shorter_than_30_frames(triton: EmbeddedServer, tmp_path: Path) -> None:
    """The file ends before 30 frames are drawn: the screenshot is taken once its capture is
    released (the wait wakes on that, nothing polls for it)."""
    video = tmp_path / "short.mp4"
    make_face_video(video, frames=10, fps=30)
    out = tmp_path / "short.png"
    proc = run_viewer(tmp_path, "--url", triton.grpc_url, "--camera", str(video), "--screenshot", str(out))
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 800


def test_camera_that_cannot_open_exits_1_with_the_reason(triton: EmbeddedServer, tmp_path: Path) -> None:
    out = tmp_path / "bad.png"
    proc = run_viewer(tmp_path, "--url", triton.grpc_url, "--camera", "9", "--screenshot", str(out))
    assert proc.returncode == 1
    assert out.is_file()  # the window, banner included, for the user to see why


def test_several_cameras_play_in_a_wall_and_the_screenshot_waits_for_every_one(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    videos = []
    for name in ("left", "right", "short"):
        video = tmp_path / f"{name}.avi"
        make_face_video(video, frames=10 if name == "short" else 90, fps=30, size=(320, 240))
        videos.append(str(video))
    out = tmp_path / "wall.png"
    cameras = [arg for video in videos for arg in ("--camera", video)]
    proc = run_viewer(tmp_path, "--url", triton.grpc_url, *cameras, "--screenshot", str(out))
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 800
    # One that cannot open: the others still play, the exit status says it.
    proc = run_viewer(
        tmp_path, "--url", triton.grpc_url, *cameras[:2], "--camera", "9", "--screenshot", str(out)
    )
    assert proc.returncode == 1
    assert "camera 9" in proc.stderr
