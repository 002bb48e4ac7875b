"""Live frames decoded no bigger than the view shows them, yet sharp: zooming in decodes the
frame on screen again at full size (its crop is the full-size decode's), resizing the window
changes the size the next frames are decoded at, and a recording gets full-size frames."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtGui import QImage

from app.server.embedded import EmbeddedServer
from app.sources.images import reduction_factor
from app.ui.view.image_view import ImageView
from app.ui.viewer import Viewer
from tests.media import decode_index, make_index_video
from tests.ui.live_fixtures import recorded_frames, shown_picture
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
HD = (1920, 1080)


def make_detailed_video(path: Path, frames: int) -> None:
    """1920x1080 MJPG frames of fine noise (what a smaller decode cannot keep) with a moving square."""
    rng = np.random.default_rng(3)
    texture = rng.integers(0, 256, (HD[1], HD[0], 3), dtype=np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, HD)
    for i in range(frames):
        frame = texture.copy()
        frame[400:600, 100 + 40 * i : 300 + 40 * i] = (0, 200, 255)
        writer.write(frame)
    writer.release()


def packets(path: Path) -> list[np.ndarray]:
    """The video's JPEGs, as the app reads them."""
    cap = cv2.VideoCapture(str(path))
    assert cap.set(cv2.CAP_PROP_FORMAT, -1)
    out = []
    while True:
        ok, packet = cap.read()
        if not ok:
            break
        out.append(packet.reshape(-1))
    cap.release()
    return out


def rendered(view: ImageView) -> np.ndarray:
    """What the viewport shows, RGB."""
    image = view.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(h, image.bytesPerLine())
    return rows[:, : w * 3].reshape(h, w, 3).copy()


def same_view_of(view: ImageView, picture: np.ndarray) -> np.ndarray:
    """`picture` (RGB, at the source's size) rendered by a view of the same size, zoom and pan."""
    reference = ImageView()
    try:
        reference.resize(view.size())
        reference.show()
        reference.set_image(picture, size=HD)
        reference.setTransform(view.transform())
        reference.horizontalScrollBar().setValue(view.horizontalScrollBar().value())
        reference.verticalScrollBar().setValue(view.verticalScrollBar().value())
        return rendered(reference)
    finally:
        reference.close()
        reference.deleteLater()


def decoded_width(viewer: Viewer) -> int:
    return viewer.window.view.shown_image().width()


def test_zooming_in_decodes_the_frame_on_screen_at_full_size(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "detail.avi"
    make_detailed_video(video, frames=12)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    shown: list[int] = []
    viewer.live.frame_shown.connect(lambda index, _age: shown.append(index))
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.state == "ended" and viewer.live.idle, what="the video to end"))
    view = viewer.window.view
    assert view.image_size() == HD and view.is_fit_mode()
    fitted = decoded_width(viewer)
    # Fitted into a ~900 px view: decoded at half size (the smallest that serves it).
    assert fitted < HD[0], fitted
    source = cv2.imdecode(packets(video)[shown[-1]], cv2.IMREAD_COLOR)[..., ::-1]
    small = cv2.resize(source, (fitted, fitted * HD[1] // HD[0]), interpolation=cv2.INTER_AREA)

    view.actual_size()  # 1:1: one source pixel per screen pixel
    harness.run(until(lambda: decoded_width(viewer) == HD[0], what="the frame decoded again at full size"))
    assert viewer.live.detail.sharpened == 1 and view.image_size() == HD
    assert np.array_equal(shown_picture(view), source)  # the very pixels of a full-size decode
    crop = rendered(view)
    sharp = np.abs(crop.astype(int) - same_view_of(view, source)).mean()
    blurred = np.abs(crop.astype(int) - same_view_of(view, small)).mean()
    print(f"zoomed crop vs the full-size decode: {sharp:.2f}; vs the half-size one: {blurred:.2f}")
    assert sharp < 1.0 and blurred > 20 * max(sharp, 0.5)


def test_the_next_frames_follow_the_window_size_and_the_zoom(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "detail.avi"
    make_detailed_video(video, frames=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))
    view = viewer.window.view
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="first frames"))

    def expected_width() -> int:
        """The smallest 1/2^k decode that gives the fitted view (and the model's 256 px) enough."""
        w, h = view.viewport_pixels()
        needed = max(256, int(np.ceil(HD[0] * min(w / HD[0], h / HD[1], 1.0))))
        return HD[0] // reduction_factor(HD[0], needed)

    widths = []
    for size in ((1280, 760), (700, 480), (2200, 1400)):
        viewer.window.resize(*size)
        target = expected_width()
        harness.run(until(lambda: decoded_width(viewer) == target, what=f"frames decoded {target} wide"))  # noqa: B023
        widths.append(target)
    assert widths[1] < widths[0] < widths[2] == HD[0], widths

    viewer.window.resize(1280, 760)
    harness.run(until(lambda: decoded_width(viewer) < HD[0], what="smaller frames again"))
    view.zoom_by(4.0)  # past 1:1 while it plays: the next frames come at full size
    harness.run(until(lambda: decoded_width(viewer) == HD[0], what="full-size frames after the zoom"))


def test_recording_writes_full_size_frames_while_the_view_gets_smaller_ones(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "index.avi"  # MJPG: decodable smaller
    size = HD
    make_index_video(video, frames=60, fps=30, size=size)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="first frames"))
    assert decoded_width(viewer) == size[0] // 2  # what the ~900 px view needs: half size

    out = tmp_path / "rec.avi"
    viewer.live.recorder.start(out)
    assert "full resolution" in viewer.window.statusBar().currentMessage()
    harness.run(until(lambda: decoded_width(viewer) == size[0], what="full-size frames on screen"))
    start = viewer.live.meter.shown
    harness.run(until(lambda: viewer.live.meter.shown >= start + 12, what="12 frames recorded"))
    harness.run(viewer.live.recorder.stop())
    assert f"at {size[0]}x{size[1]}" in viewer.window.statusBar().currentMessage()
    harness.run(until(lambda: decoded_width(viewer) < size[0], what="smaller frames once it stopped"))

    frames = recorded_frames(out)
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(frames) == len(records) >= 10
    assert all(f.shape == (size[1], size[0], 3) for f in frames)
    # Each recorded picture is the source's frame it says it is, at the source's size.
    assert [decode_index(f) for f in frames] == [r["frame"] % 60 for r in records]
