"""The live preview in the whole window, against the real server: video files through the
same LiveCapture path a camera uses (there is no camera on the test machines)."""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QTimer

from app.pipeline.live import frame_of
from app.server.embedded import EmbeddedServer
from app.sources.frame import Frame
from app.ui.analysis.request_log import COL_FRAME
from app.ui.viewer import Viewer
from tests.media import face_box, face_scale_for, make_face_video, make_index_video
from tests.ui.live_fixtures import (
    box_rects,
    head_left,
    live_threads,
    make_slow_video,
    recorded_frames,
    shown_picture,
)
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
SIZE = (640, 480)


def ended(viewer: Viewer) -> bool:
    return viewer.live.state == "ended" and viewer.live.idle


def test_boxes_follow_the_face_on_the_frame_they_were_computed_on(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "face.avi"
    positions = make_face_video(video, frames=60, fps=30, size=SIZE)  # ~8 px per frame at mid-course
    scale = face_scale_for(SIZE)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    shown: list[tuple[int, int, list[tuple[float, float, float, float]]]] = []
    viewer.live.frame_shown.connect(
        lambda index, _age: shown.append(
            (index, head_left(shown_picture(viewer.window.view)), box_rects(viewer))
        )
    )
    # Looped until the whole video has played and 15 frames were drawn: live, frames are
    # dropped while the model is busy, so how many of one play get drawn depends on the load.
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))

    def played_and_drawn() -> bool:
        return len(shown) >= 15 and shown[-1][0] >= len(positions) - 1

    harness.run(until(played_and_drawn, what="15 frames drawn and one whole play"))
    viewer.live.stop()
    harness.run(until(lambda: viewer.live.state == "stopped" and viewer.live.idle, what="stopped"))
    indices = [index for index, _, _ in shown]
    assert indices == sorted(set(indices)), "frames are shown in order, never an older one after a newer"
    for index, left, boxes in shown:
        position = positions[index % len(positions)]  # frame indices go on counting through loops
        # The picture is frame `index` (the head's left edge where that frame has it) ...
        assert abs(left - position[0]) <= 3, (index, left, position)
        # ... and the box is the face of that same frame.
        assert len(boxes) == 1, (index, boxes)
        x1, y1, x2, y2 = boxes[0]
        ex1, ey1, ex2, ey2 = face_box(position, scale)
        assert abs((x1 + x2) / 2 - (ex1 + ex2) / 2) <= 20, (index, boxes[0], (ex1, ey1, ex2, ey2))
        assert abs((y1 + y2) / 2 - (ey1 + ey2) / 2) <= 20, (index, boxes[0], (ex1, ey1, ex2, ey2))
    centres = [(b[0][0] + b[0][2]) / 2 for _, _, b in shown]
    assert max(centres) - min(centres) > 200, "the face crossed the picture and the boxes with it"
    stats = viewer.live.display_stats()
    assert stats.shown == len(shown) and stats.latency_p50_ms is not None
    assert viewer.window.stats_panel.value_text("Display frames/s") != ""


def test_backpressure_holds_the_limit_drops_frames_and_latency_stays_bounded(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = make_slow_video(tmp_path / "slow.avi", frames=150, delay_ms=250)  # 5 s at 30 fps
    viewer = harness.viewer(triton.grpc_url, "slow_faces", camera=str(video))
    ages: list[float] = []
    viewer.live.frame_shown.connect(lambda _index, age: ages.append(age))
    peak = {"value": 0, "limit": 2}
    samples = []

    def sample() -> None:
        s = viewer.live.stream_stats()
        if s is not None:
            samples.append((s.in_flight, peak["limit"]))
            peak["value"] = max(peak["value"], s.in_flight)

    sampler = QTimer()
    sampler.setInterval(10)
    sampler.timeout.connect(sample)
    sampler.start()
    try:
        harness.run(until(lambda: len(ages) >= 4, what="first frames"))
        first = viewer.live.stream_stats()
        assert first is not None
        harness.run(until(lambda: len(ages) >= 12, what="more frames"))
        middle = viewer.live.stream_stats()
        assert middle is not None
        # Lower the limit at run time: from the next free slot on, one request at a time.
        viewer.live_ui.toolbar.in_flight.setValue(1)
        harness.run(until(lambda: (viewer.live.stream_stats() or middle).in_flight <= 1, what="window 1"))
        peak["limit"] = 1
        harness.run(until(lambda: ended(viewer), what="the video to end"))
    finally:
        sampler.stop()
    assert len(samples) > 100
    assert max(n for n, limit in samples if limit == 2) == 2, "the window of 2 was used"
    assert all(n <= limit for n, limit in samples), "never more in flight than the limit"
    assert 0 < first.dropped < middle.dropped, "frames arriving while the window is full are dropped"
    assert middle.submitted + middle.dropped == middle.offered
    # A pipeline that buffered frames would show older and older frames; this one does not.
    quarter = max(len(ages) // 4, 2)
    early, late = statistics.median(ages[:quarter]), statistics.median(ages[-quarter:])
    print(f"capture-to-display median: early {early:.0f} ms, late {late:.0f} ms over {len(ages)} frames")
    assert late < 2 * early + 150, (early, late)


def test_frame_by_frame_gives_every_frame_a_result(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "index.avi"
    make_index_video(video, frames=40, fps=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.live_ui.toolbar.frame_by_frame.setChecked(True)
    viewer.live_ui.toolbar.in_flight.setValue(3)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: ended(viewer), what="the video to end"))
    log = viewer.window.request_log
    harness.run(until(lambda: log.model.rowCount() >= 40, what="40 log rows"))
    rows = [log.model.row(i) for i in range(log.model.rowCount())]
    assert sorted(int(r.texts[COL_FRAME]) for r in rows) == list(range(40))
    assert all(r.status.value == "ok" for r in rows)
    stats = viewer.live.display_stats()
    assert stats.results == 40


def test_stop_and_close_while_streaming_release_every_thread(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "face.mp4"
    make_face_video(video, frames=60, fps=30, size=SIZE)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    bar = viewer.live_ui.toolbar
    bar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 10, what="10 frames"))
    assert live_threads()
    started = time.monotonic()
    bar.stop_action.trigger()
    harness.run(until(lambda: viewer.live.state == "stopped" and viewer.live.idle, what="stopped"))
    print(f"stop: {1000 * (time.monotonic() - started):.0f} ms")
    assert live_threads() == []
    shown = viewer.live.meter.shown
    harness.run(asyncio.sleep(0.3))
    assert viewer.live.meter.shown == shown, "nothing drawn after Stop"

    # Frame by frame against the slow model: the capture thread waits inside offer() for a
    # slot when the window closes; closing must still free it at once.
    slow = make_slow_video(tmp_path / "slow.avi", frames=60, delay_ms=500)
    viewer.window.server_panel.model_chosen.emit("slow_faces")
    harness.run(
        until(
            lambda: (
                viewer.connection.session is not None
                and viewer.connection.session.info is not None
                and viewer.connection.session.info.name == "slow_faces"
            ),
            what="slow_faces",
        )
    )
    bar.frame_by_frame.setChecked(True)
    viewer.live_ui.open_source(str(slow))
    harness.run(until(lambda: (viewer.live.stream_stats() or _none()).in_flight == 2, what="2 in flight"))
    session = viewer.connection.session
    started = time.monotonic()
    harness.close(viewer)
    print(f"close: {1000 * (time.monotonic() - started):.0f} ms")
    assert live_threads() == []
    assert session is not None and session.in_flight == 0


def _none() -> object:
    class Empty:
        in_flight = -1

    return Empty()


def test_missing_video_and_bad_camera_show_a_clear_error(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.mp4"
    viewer = harness.viewer(triton.grpc_url, "face_detector", camera=str(missing))
    harness.connected(viewer)
    banner = viewer.window.banner
    assert banner.isVisible() and str(missing) in banner.text()
    assert "neither a camera index, an existing video file nor a stream URL" in banner.text()
    viewer.live.open(7)  # no /dev/video7 here
    harness.run(until(lambda: viewer.live.state == "failed" and viewer.live.idle, what="camera 7 to fail"))
    assert "cannot open camera 7" in banner.text() and "/dev/video7" in banner.text()
    assert live_threads() == []
    assert viewer.connection.state == "connected"  # the rest of the viewer is unaffected


class UnpluggedCamera:
    """A capture that delivers a few frames and then fails like an unplugged USB camera."""

    def __init__(self, frames: int) -> None:
        self.left = frames

    def isOpened(self) -> bool:
        return True

    def read(self) -> tuple[bool, np.ndarray | None]:
        return self.retrieve() if self.grab() else (False, None)

    def grab(self) -> bool:
        time.sleep(1 / 30)
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        return True, np.full((48, 64, 3), 90, np.uint8)

    def get(self, _prop: int) -> float:
        return 0.0

    def set(self, _prop: int, _value: float) -> bool:
        return False

    def release(self) -> None:
        pass


def test_camera_unplugged_mid_stream_is_reported(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.live.opener = lambda _spec, _res: UnpluggedCamera(frames=15)
    viewer.live.open(0)
    harness.run(until(lambda: viewer.live.state == "failed" and viewer.live.idle, what="failure"))
    assert viewer.live.meter.shown > 0
    assert "camera 0 stopped delivering frames" in viewer.window.banner.text()
    assert live_threads() == []


def test_recording_writes_the_annotated_video_and_jsonl(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "face.mp4"
    make_face_video(video, frames=90, fps=30, size=SIZE)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    # Looped: a busy machine may draw fewer than 30 frames of one 3 s play (live drops frames).
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="first frames"))
    out = tmp_path / "rec" / "live.mp4"
    out.parent.mkdir()
    viewer.live.recorder.start(out)
    assert viewer.live_ui.toolbar.record_action.isChecked()
    harness.run(until(lambda: viewer.live.meter.shown >= 30, what="30 more frames"))
    harness.run(viewer.live.recorder.stop())
    assert not viewer.live_ui.toolbar.record_action.isChecked()
    frames = recorded_frames(out)
    records = [json.loads(line) for line in (tmp_path / "rec" / "live.jsonl").read_text().splitlines()]
    assert len(frames) >= 10 and len(records) == len(frames)
    assert frames[0].shape == (480, 640, 3)
    assert [r["recording_frame"] for r in records] == list(range(len(records)))
    # "frame" is the source's own frame number: recording started a few frames in.
    assert records[0]["frame"] >= 3 and all(b["frame"] > a["frame"] for a, b in itertools.pairwise(records))
    assert all(b["timestamp"] >= a["timestamp"] for a, b in itertools.pairwise(records))
    assert sum(1 for r in records if [d["label"] for d in r["detections"]] == ["face"]) >= 0.9 * len(records)
    # The boxes are drawn into the recorded picture: the class colour (BGR) fills the label's
    # tag on the box's top edge (the 2-pixel outline itself blurs in mp4v's 4:2:0 colour).
    first = records[0]["detections"][0]["box"]
    x1, y1 = round(first[0]), round(first[1])
    tag = np.median(frames[0][y1 - 6 : y1 - 1, x1 + 2 : x1 + 8].reshape(-1, 3), axis=0)
    assert abs(tag[0] - 180) < 40 and abs(tag[2] - 31) < 40, tag
    assert "recorded" in viewer.window.statusBar().currentMessage()


def test_frame_tag_pairs_image_and_result(harness: Harness, triton: EmbeddedServer, tmp_path: Path) -> None:
    """Every live result carries the very frame object it was computed on."""
    video = tmp_path / "index.avi"
    make_index_video(video, frames=20, fps=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector", camera=str(video))
    seen: list[tuple[int, Frame]] = []
    viewer.live.result.connect(lambda r: seen.append((r.frame, frame_of(r))))
    harness.run(until(lambda: ended(viewer), what="the video to end"))
    from tests.media import decode_index

    assert seen and all(index == frame.index == decode_index(frame.image) for index, frame in seen)
