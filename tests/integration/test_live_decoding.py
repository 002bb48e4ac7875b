"""A live stream's frames against the real face detector: only the frames sent are decoded,
at the size the plan asks for, and their boxes come back in the source's pixels."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from app.pipeline.live import LiveJob, LiveOptions, LiveRun, frame_of
from app.pipeline.live_decode import DecodePlan, ViewNeed
from app.server.embedded import EmbeddedServer
from app.sources.frame import Frame
from app.sources.grabs import FULL, DecodeRequest, Grab
from app.sources.live import LiveCapture
from tests.media import make_webcam_video

SIZE = (1920, 1080)


@pytest.fixture(scope="module")
def webcam_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("decoding") / "webcam.avi"
    make_webcam_video(path, frames=40, fps=30, size=SIZE)
    return path


def test_frames_that_are_dropped_are_never_decoded(triton: EmbeddedServer, webcam_video: Path) -> None:
    decoded: list[int] = []
    results: list[InferenceResult] = []
    ended = threading.Event()
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model="face_detector", limits=Limits(max_in_flight=8)
        )
    ) as session:
        job = LiveJob(session, results.append, max_in_flight=1, drop_when_busy=True)
        plan = DecodePlan(ViewNeed((640, 360)))

        class Counted(Grab):
            def decode(self, request: DecodeRequest = FULL) -> Frame | None:
                decoded.append(self.index)
                return super().decode(request)

        def on_grab(grab: Grab) -> None:
            assert grab.packet is not None  # an MJPG file: a packet, decodable at any time
            job.offer(Counted(grab.index, grab.source, grab.timestamp, grab.pts_ms, packet=grab.packet), plan)

        # Not paced: 40 frames read as fast as the file allows, far faster than one at a time.
        capture = LiveCapture(webcam_video, on_grab=on_grab, on_end=ended.set, realtime=False)
        capture.start()
        assert ended.wait(30)
        assert capture.stop()
        job.finish()
        assert job.group.wait_drained(30)
    stats = job.stats()
    assert stats.offered == 40 and stats.dropped > 0
    assert len(decoded) == stats.submitted == stats.offered - stats.dropped  # one decode per frame sent
    assert sorted(r.frame for r in results if r.frame is not None) == sorted(decoded)
    # 640x360 on screen and 256 px for the model: decoded at 1/2 (960 px), boxes in 1920x1080 pixels.
    frames = [frame_of(r) for r in results]
    assert all(f.width == 960 and f.source_size == SIZE for f in frames)
    assert all(r.width == SIZE[0] and r.height == SIZE[1] for r in results)


def test_boxes_of_reduced_frames_match_those_of_full_frames(
    triton: EmbeddedServer, webcam_video: Path
) -> None:
    results: list[InferenceResult] = []
    drained = threading.Event()
    plan = DecodePlan(ViewNeed((480, 270)))  # a small view: 1/4 (480 px), more than the model's 256
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model="face_detector", limits=Limits(max_in_flight=8)
        )
    ) as session:
        run = LiveRun(
            webcam_video,
            session,
            results.append,
            lambda _event, _message: None,
            LiveOptions(frame_by_frame=True),
            on_drained=drained.set,
            decode_plan=plan,
        )
        run.start()
        assert drained.wait(60)
        assert run.stop()
        assert len(results) == 40
        cap = cv2.VideoCapture(str(webcam_video))
        for result in sorted(results, key=lambda r: r.frame or 0)[::8]:
            frame = frame_of(result)
            assert frame.width == 480 and frame.reduced
            cap.set(cv2.CAP_PROP_POS_FRAMES, frame.index)
            ok, bgr = cap.read()
            assert ok
            full = session.infer(np.ascontiguousarray(bgr[..., ::-1]))
            assert len(result.detections) == len(full.detections) == 1, (result.detections, full.detections)
            reduced_box, full_box = np.array(result.detections[0].box), np.array(full.detections[0].box)
            # A 560x600 face found within a few source pixels of where the full frame has it.
            assert np.abs(reduced_box - full_box).max() < 12, (reduced_box, full_box)
        cap.release()
