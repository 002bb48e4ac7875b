"""Recorder: video + JSONL written off the caller's thread, aligned, readable back."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, SemanticMask
from app.pipeline.recording import LiveRecording
from app.sources.frame import Frame
from app.sources.recorder import Recorder
from app.sources.video_file import VideoFileReader
from tests.media import decode_index, index_frame

SIZE = (160, 120)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("suffix", [".mp4", ".avi"])
def test_recording_reads_back_with_the_same_frames(tmp_path: Path, suffix: str) -> None:
    video, jsonl = tmp_path / f"rec{suffix}", tmp_path / "rec.jsonl"
    t0 = time.monotonic()
    with Recorder(video, jsonl, fps=30) as recorder:
        for i in range(40):
            detections = [{"box": [1, 2, 3, 4], "score": np.float32(0.5), "class_id": 0, "label": "face"}]
            assert recorder.write(index_frame(i, SIZE), detections, timestamp=t0 + i / 30)
    assert recorder.written == 40 and recorder.dropped == 0 and recorder.error is None
    with VideoFileReader(video) as reader:
        assert reader.fps == pytest.approx(30, abs=0.1)
        frames = list(reader)
    assert [decode_index(f.image) for f in frames] == list(range(40))
    records = _lines(jsonl)
    assert [r["frame"] for r in records] == list(range(40))
    assert [r["timestamp"] for r in records] == pytest.approx([i / 30 for i in range(40)], abs=0.01)
    assert records[0]["detections"] == [{"box": [1, 2, 3, 4], "score": 0.5, "class_id": 0, "label": "face"}]


def test_colours_survive_rgb_in_bgr_out(tmp_path: Path) -> None:
    video = tmp_path / "red.avi"
    with Recorder(video, tmp_path / "red.jsonl", fps=10) as recorder:
        for _ in range(3):
            recorder.write(np.full((48, 64, 3), (255, 0, 0), np.uint8))  # RGB red
    with VideoFileReader(video) as reader:
        r, g, b = next(iter(reader)).image[24, 32]
    assert r > 200 and g < 60 and b < 60


def test_the_first_frame_sets_the_size_later_sizes_are_fitted(tmp_path: Path) -> None:
    video, jsonl = tmp_path / "rec.mp4", tmp_path / "rec.jsonl"
    with Recorder(video, jsonl, fps=30) as recorder:
        recorder.write(np.zeros((120, 160, 3), np.uint8), [Detection((1.0, 2.0, 3.0, 4.0), 0.9, 0, "face")])
        recorder.write(np.zeros((240, 320, 3), np.uint8))
    assert recorder.size == (160, 120)
    with VideoFileReader(video) as reader:
        frames = list(reader)
    assert len(frames) == 2 and all(f.image.shape == (120, 160, 3) for f in frames)
    assert _lines(jsonl)[0]["detections"][0]["label"] == "face"


def test_records_carry_the_source_frame_and_the_recording_index(tmp_path: Path) -> None:
    video, jsonl = tmp_path / "rec.avi", tmp_path / "rec.jsonl"
    t0 = time.monotonic()
    with Recorder(video, jsonl, fps=10) as recorder:
        for n, source_frame in enumerate((136, 137, 139)):
            recorder.write(index_frame(n, SIZE), timestamp=t0 + n / 10, frame=source_frame)
    records = _lines(jsonl)
    assert [r["frame"] for r in records] == [136, 137, 139]
    assert [r["recording_frame"] for r in records] == [0, 1, 2]
    assert [r["timestamp"] for r in records] == pytest.approx([0.0, 0.1, 0.2], abs=1e-6)


def test_render_draws_on_the_writer_thread(tmp_path: Path) -> None:
    threads: list[str] = []

    def render(image: np.ndarray, detections: list[Any], extra: dict[str, Any]) -> np.ndarray:
        threads.append(threading.current_thread().name)
        return np.full_like(image, 255)

    video = tmp_path / "white.avi"
    with Recorder(video, tmp_path / "white.jsonl", fps=10, render=render) as recorder:
        recorder.write(np.zeros((48, 64, 3), np.uint8))
    with VideoFileReader(video) as reader:
        assert next(iter(reader)).image.min() > 200
    assert threads == ["Recorder[white.avi]"]


def test_draw_extra_reaches_render_but_not_the_record(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def render(image: np.ndarray, detections: list[Any], extra: dict[str, Any]) -> np.ndarray:
        seen.append(dict(extra))
        return image

    video, jsonl = tmp_path / "style.avi", tmp_path / "style.jsonl"
    with Recorder(video, jsonl, fps=10, render=render) as recorder:
        recorder.write(np.zeros((48, 64, 3), np.uint8), extra={"note": "kept"}, draw_extra={"style": "bold"})
    assert seen == [{"note": "kept", "style": "bold"}]
    (record,) = _lines(jsonl)
    assert record["note"] == "kept" and "style" not in record


def test_full_queue_drops_without_blocking_and_counts(tmp_path: Path) -> None:
    video, jsonl = tmp_path / "rec.avi", tmp_path / "rec.jsonl"
    gate = threading.Event()

    def stuck_disk(rgb: np.ndarray, _detections: list[Any], _extra: dict[str, Any]) -> np.ndarray:
        gate.wait(60)  # the writer thread is held here, as by a disk that does not answer
        return rgb

    recorder = Recorder(video, jsonl, fps=30, render=stuck_disk, queue_size=3)
    accepted: list[bool] = []
    caller = threading.Thread(
        target=lambda: accepted.extend(recorder.write(index_frame(i, SIZE)) for i in range(20))
    )
    caller.start()
    caller.join(30)
    stuck = caller.is_alive()
    gate.set()
    assert not stuck, "write() waited for the stuck writer thread"
    assert recorder.close(timeout=5)
    assert recorder.close()  # idempotent
    assert not recorder.write(index_frame(0, SIZE))  # after close: refused, not counted
    kept = [i for i, ok in enumerate(accepted) if ok]
    assert 3 <= len(kept) <= 4 and recorder.written == len(kept)
    assert recorder.dropped == 20 - len(kept)
    with VideoFileReader(video) as reader:
        assert [decode_index(f.image) for f in reader] == kept
    assert [r["frame"] for r in _lines(jsonl)] == list(range(len(kept)))
    assert not any(t.name.startswith("Recorder[") for t in threading.enumerate())


def test_unsupported_extension_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.mp4"):
        Recorder(tmp_path / "x.gif", tmp_path / "x.jsonl", fps=30)
    assert not any(t.name.startswith("Recorder[") for t in threading.enumerate())


def test_a_live_recording_keeps_semantic_masks_and_classes(tmp_path: Path) -> None:
    full = np.zeros((48, 64), bool)
    full[10:30, 20:40] = True
    person = SemanticMask(0, "person", BinaryMask.from_full(full))
    top = [ClassScore(3, "tabby", 0.91)]
    recording = LiveRecording()
    video = tmp_path / "seg.avi"
    recording.start(video, fps=10)
    t0 = time.monotonic()
    for i in range(3):
        frame = Frame(100 + i, np.zeros((48, 64, 3), np.uint8), "cam", t0 + i / 10)
        recording.write(frame, [], [person], top)
    summary = recording.stop()
    assert summary is not None and summary.ok, summary
    records = _lines(video.with_suffix(".jsonl"))
    assert [r["frame"] for r in records] == [100, 101, 102]
    assert records[0]["masks"][0]["label"] == "person" and records[0]["masks"][0]["area"] == 400
    assert records[0]["classes"] == [{"class_id": 3, "label": "tabby", "score": 0.91}]
    # No painter given (the viewer gives its own: tests/ui/test_same_pictures.py): as captured.
    with VideoFileReader(video) as reader:
        picture = next(iter(reader)).image
    assert picture[20, 30].max() < 20 and picture[45, 5].max() < 20
