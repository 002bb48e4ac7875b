"""Live-stream inference: a video file through the same capture path a camera uses, against
the slow test model, with the per-stream in-flight window."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult, Status
from app.pipeline.live import LiveJob, frame_of
from app.server.embedded import EmbeddedServer
from app.sources.frame import Frame
from app.sources.live import LiveCapture


def make_slow_video(path: Path, frames: int, delay_ms: int, fps: float = 30.0) -> None:
    """Frames whose pixel [0,0] makes slow_faces take about `delay_ms` (MJPG keeps it close)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (160, 120))
    for i in range(frames):
        image = np.full((120, 160, 3), 0, np.uint8)
        image[:8, :8, 2] = delay_ms // 10  # BGR: red channel = pixel [0,0,0] once converted to RGB
        cv2.putText(image, str(i), (40, 80), cv2.FONT_HERSHEY_SIMPLEX, 1.5, (255, 255, 255), 2)
        writer.write(image)
    writer.release()


class Display:
    """What the viewer does with a result: show its frame, note how old the frame is."""

    def __init__(self) -> None:
        self.results: list[InferenceResult] = []
        self.ages_ms: list[float] = []
        self.peak_in_flight = 0
        self.lock = threading.Lock()

    def __call__(self, result: InferenceResult) -> None:
        frame = frame_of(result)
        with self.lock:
            self.results.append(result)
            self.ages_ms.append((time.monotonic() - frame.timestamp) * 1000)


def run_stream(url: str, video: Path, *, realtime: bool, drop: bool, window: int) -> tuple[Display, LiveJob]:
    display = Display()
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(url), model="slow_faces", limits=Limits(max_in_flight=64))
    ) as session:
        stream = LiveJob(session, display, max_in_flight=window, drop_when_busy=drop)
        ended = threading.Event()

        def offer(frame: Frame) -> None:
            stream.offer(frame)
            display.peak_in_flight = max(display.peak_in_flight, stream.stats().in_flight)

        capture = LiveCapture(video, on_frame=offer, on_end=ended.set, realtime=realtime)
        capture.start()
        assert ended.wait(60)
        capture.stop()
        stream.finish()
        assert stream.group.wait_drained(10)
    return display, stream


@pytest.mark.slow
def test_live_mode_holds_the_window_drops_frames_and_never_falls_behind(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "slow.avi"
    make_slow_video(video, frames=90, delay_ms=200)  # a 3 s, 30 fps source; 200 ms per request
    display, stream = run_stream(triton.grpc_url, video, realtime=True, drop=True, window=2)
    stats = stream.stats()
    assert display.peak_in_flight <= 2
    assert stats.offered == 90
    assert stats.dropped > 30, "the model is far slower than the source: most frames are skipped"
    assert stats.submitted + stats.dropped == stats.offered
    assert stats.completed == stats.submitted == len(display.results)
    assert all(r.ok for r in display.results)
    # Boxes are computed on the frame they come with.
    assert all(r.frame == frame_of(r).index and (r.width, r.height) == (160, 120) for r in display.results)
    # A buffering pipeline would show frames older and older (seconds by the end);
    # here the age of the frames shown stays where it started.
    quarter = len(display.ages_ms) // 4
    early, late = statistics.median(display.ages_ms[:quarter]), statistics.median(display.ages_ms[-quarter:])
    assert late < 2 * early + 150, (early, late)


@pytest.mark.slow
def test_frame_by_frame_mode_drops_nothing(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "slow.avi"
    make_slow_video(video, frames=30, delay_ms=20)
    display, stream = run_stream(triton.grpc_url, video, realtime=False, drop=False, window=2)
    stats = stream.stats()
    assert stats.dropped == 0 and stats.submitted == stats.offered == 30
    assert sorted(r.frame for r in display.results) == list(range(30))
    assert display.peak_in_flight <= 2


def test_stop_cancels_the_streams_requests(triton: EmbeddedServer) -> None:
    display = Display()
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        stream = LiveJob(session, display, max_in_flight=3)
        image = np.zeros((32, 32, 3), np.uint8)
        image[0, 0, 0] = 200  # 2 s
        for i in range(5):
            stream.offer(Frame(index=i, image=image, source="test", timestamp=time.monotonic()))
        assert stream.stats().in_flight == 3 and stream.stats().dropped == 2
        stream.stop()
        assert not stream.offer(Frame(index=9, image=image, source="test", timestamp=time.monotonic()))
        assert stream.group.wait_drained(5)
    assert [r.status for r in display.results] == [Status.CANCELLED] * 3
    assert stream.stats().in_flight == 0
