"""Recording does what was meant: Record pressed before Start records from the stream's first
frame, a REC mark with the elapsed time shows on the video, the JSON Lines number frames as
the source does, and a recording that cannot start says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer
from app.ui.live.recording import RecordingState
from tests.media import decode_index, make_index_video
from tests.ui.live_fixtures import recorded_frames
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
FRAMES = 40


def test_record_armed_before_start_records_from_the_first_frame(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "index.avi"
    make_index_video(video, frames=FRAMES, fps=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    ui, live = viewer.live_ui, viewer.live
    ui.toolbar.frame_by_frame.setChecked(True)  # every frame inferred: every frame recorded
    ui.open_source(str(video))
    harness.run(until(lambda: live.state == "ended" and live.idle, what="the first play to end"))
    assert ui.toolbar.record_action.isEnabled() and ui.toolbar.start_action.isEnabled()

    out = tmp_path / "rec" / "armed.avi"
    out.parent.mkdir()
    ui.record_to(str(out))  # what the Record dialog does with the chosen name
    assert live.recorder.state is RecordingState.ARMED
    assert ui.rec_mark.isVisible() and "armed" in ui.rec_mark.text()
    assert ui.toolbar.record_action.isChecked()
    assert not out.exists()

    ui.toolbar.start_action.trigger()  # Start: the recording begins with the first frame
    harness.run(until(lambda: live.recorder.state is RecordingState.RECORDING, what="recording"))
    assert ui.rec_mark.isVisible() and ui.rec_mark.text().startswith("● REC 00:0")
    harness.run(until(lambda: live.state == "ended" and live.idle, what="the video to end"))
    harness.run(until(lambda: live.recorder.state is RecordingState.OFF, what="recording closed"))
    assert not ui.rec_mark.isVisible() and not ui.toolbar.record_action.isChecked()
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert f"recorded {FRAMES} frames" in viewer.window.statusBar().currentMessage(), [
        r["frame"] for r in records
    ]
    assert [r["frame"] for r in records] == list(range(FRAMES)), "numbered as the source numbers them"
    assert [r["recording_frame"] for r in records] == list(range(FRAMES))
    assert records[0]["timestamp"] == 0.0
    frames = recorded_frames(out)
    assert len(frames) == FRAMES
    assert decode_index(frames[0]) == 0, "the recording's first picture is the first captured frame"
    assert [decode_index(f) for f in frames] == list(range(FRAMES))


def test_an_armed_recording_that_never_starts_says_so_and_writes_nothing(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "index.avi"
    make_index_video(video, frames=10, fps=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    ui, live = viewer.live_ui, viewer.live
    ui.open_source(str(video))
    harness.run(until(lambda: live.state == "ended" and live.idle, what="the video to end"))
    cancelled = tmp_path / "cancelled.mp4"
    ui.record_to(str(cancelled))
    ui.toolbar.record_action.trigger()  # pressed again before Start: cancelled
    harness.run(until(lambda: live.recorder.state is RecordingState.OFF, what="disarmed"))
    assert "cancelled before the stream started" in viewer.window.statusBar().currentMessage()
    assert not ui.rec_mark.isVisible()

    # Armed, then the source fails on Start: a clear message, no file.
    missing = tmp_path / "gone.avi"
    ui.open_source(str(missing))
    harness.run(until(lambda: live.state == "failed", what="the missing file to fail"))
    live.source = str(video)
    video.rename(missing.with_name("moved.avi"))  # the file disappears before Start
    failing = tmp_path / "never.mp4"
    ui.record_to(str(failing))
    ui.toolbar.start_action.trigger()
    harness.run(until(lambda: live.recorder.state is RecordingState.OFF, what="disarmed"))
    assert "nothing recorded to never.mp4" in viewer.window.banner.text()
    assert not failing.exists() and not cancelled.exists()


def test_a_recording_cut_short_by_the_source_keeps_every_frame_and_says_why(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    from tests.ui.test_live_preview import UnpluggedCamera

    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    live = viewer.live
    recorded: list[int] = []
    live.result.connect(lambda r: recorded.append(r.frame) if r.ok and live.recorder.active else None)
    live.opener = lambda _spec, _res: UnpluggedCamera(frames=25)
    live.open(0)
    harness.run(until(lambda: live.meter.shown >= 2, what="first frames"))
    out = tmp_path / "cut.avi"
    viewer.live_ui.record_to(str(out))
    harness.run(until(lambda: live.state == "failed" and live.idle, what="the camera to fail"))
    harness.run(until(lambda: live.recorder.state is RecordingState.OFF, what="recording closed"))
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(records) >= 5
    assert len(recorded_frames(out)) == len(records), "every queued frame reached the file"
    assert [r["frame"] for r in records] == sorted(r["frame"] for r in records)
    written = {r["frame"] for r in records}
    assert {f for f in recorded if f >= records[0]["frame"]} <= written, "no annotated frame was lost"
    message = viewer.window.statusBar().currentMessage()
    assert f"recorded {len(records)} frames" in message, message
    assert "the stream stopped: camera 0 stopped delivering frames" in message, message
