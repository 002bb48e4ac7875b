"""LiveRecorder on its own (no server, no capture): the recording's state machine (off, armed,
recording), the full-size decode it asks for, frame order restored, and what it says. The
video and its JSON Lines are really written (app.pipeline.recording) and read back."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from pytestqt.qtbot import QtBot

from app.drawing.style import AnnotationStyle
from app.inference.result import Detection, InferenceResult, Status
from app.pipeline.live_decode import DecodePlan
from app.sources.frame import Frame
from app.ui.live.recording import LiveRecorder, RecordingState
from tests.media import decode_index, index_frame
from tests.ui.live_fixtures import recorded_frames

pytestmark = pytest.mark.gui
SIZE = (160, 120)


class Stream:
    """What the live controller tells the recorder, set by each test."""

    def __init__(self) -> None:
        self.playing = False
        self.settled = False
        self.reports: list[tuple[str, bool]] = []
        self.states: list[RecordingState] = []


def make_recorder(stream: Stream, plan: DecodePlan, executor: ThreadPoolExecutor) -> LiveRecorder:
    recorder = LiveRecorder(
        plan,
        executor,
        lambda message, error: stream.reports.append((message, error)),
        playing=lambda: stream.playing,
        fps=lambda: 10.0,
        settled=lambda: stream.settled,
        frame_by_frame=lambda: True,
        trails=lambda: (),
        visible=lambda result: result.detections,
        style=AnnotationStyle,
    )
    recorder.state_changed.connect(stream.states.append)
    return recorder


def result_of(index: int) -> tuple[Frame, InferenceResult]:
    frame = Frame(index, index_frame(index, SIZE), "index.avi", time.monotonic())
    box = Detection((10.0, 10.0, 50.0, 40.0), 0.9, 0, "face")
    return frame, InferenceResult(f"r{index}", Status.OK, source="index.avi", frame=index, detections=[box])


def test_armed_before_the_stream_it_records_every_frame_in_order(qtbot: QtBot, tmp_path: Path) -> None:
    stream, plan = Stream(), DecodePlan()
    out = tmp_path / "armed.avi"
    with ThreadPoolExecutor(1) as executor:
        recorder = make_recorder(stream, plan, executor)
        recorder.start(out)  # nothing plays yet: armed
        assert recorder.state is RecordingState.ARMED and recorder.armed == out
        assert plan.full, "frames are decoded at full size from the stream's first one"
        assert not recorder.active and not out.exists()

        stream.playing = True
        recorder.stream_started()  # the run's first result
        assert recorder.state is RecordingState.RECORDING and recorder.since is not None
        for index in (1, 0, 3, 2, 4):  # results come out of order
            recorder.record(*result_of(index))
        asyncio.run(recorder.stop())
    assert recorder.state is RecordingState.OFF and not plan.full and recorder.since is None
    assert stream.states == [RecordingState.ARMED, RecordingState.RECORDING, RecordingState.OFF]
    frames = recorded_frames(out)
    assert [decode_index(f) for f in frames] == [0, 1, 2, 3, 4], "in frame order"
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert [r["frame"] for r in records] == [0, 1, 2, 3, 4]
    assert all(len(r["detections"]) == 1 for r in records)
    message, error = stream.reports[-1]
    assert "recorded 5 frames" in message and not error


def test_an_armed_recording_whose_stream_never_starts_writes_nothing_and_says_why(
    qtbot: QtBot, tmp_path: Path
) -> None:
    stream, plan = Stream(), DecodePlan()
    out = tmp_path / "never.avi"
    with ThreadPoolExecutor(1) as executor:
        recorder = make_recorder(stream, plan, executor)
        recorder.start(out)
        recorder.disarm("the source failed before its first frame (no such camera)")
    assert recorder.state is RecordingState.OFF and recorder.armed is None and not plan.full
    assert stream.reports[-1] == (
        "nothing recorded to never.avi: the source failed before its first frame (no such camera)",
        True,
    )
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_a_reduced_frame_is_left_out_and_a_bad_name_is_refused(qtbot: QtBot, tmp_path: Path) -> None:
    stream, plan = Stream(), DecodePlan()
    stream.playing = True
    with ThreadPoolExecutor(1) as executor:
        recorder = make_recorder(stream, plan, executor)
        recorder.start(tmp_path / "clip.txt")  # not a video container
        assert recorder.state is RecordingState.OFF and not plan.full
        message, error = stream.reports[-1]
        assert error and "clip.txt" in message

        out = tmp_path / "clip.avi"
        recorder.start(out)  # plays: records from the next result on
        assert recorder.state is RecordingState.RECORDING
        small = Frame(0, np.zeros((60, 80, 3), np.uint8), "index.avi", time.monotonic(), original_size=SIZE)
        recorder.record(small, result_of(0)[1])  # decoded before full size was asked for
        recorder.record(*result_of(1))
        asyncio.run(recorder.stop())
    assert [decode_index(f) for f in recorded_frames(out)] == [1]
