"""The compare pipeline against the real server: two sessions, two independent request
streams, results paired per input (batch) and per frame (live)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.protocol import parse_endpoints
from app.pipeline.compare import CompareBatch, ComparedInput, CompareTally, Side
from app.pipeline.compare_live import CompareLiveRun, LivePair, LivePairer
from app.pipeline.live import LiveEvent, LiveOptions
from app.server.embedded import EmbeddedServer
from app.sources.frame import Frame
from tests.integration.session_helpers import delayed_image
from tests.integration.test_live_job import make_slow_video

pytestmark = pytest.mark.slow


def write_rgb(path: Path, image: np.ndarray) -> None:
    cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))


def test_a_slow_b_never_holds_a_back_and_every_input_is_paired_once(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    for i in range(8):  # slow_faces answers each after ~400 ms; the face detector at once
        write_rgb(tmp_path / f"img_{i}.png", delayed_image(400))
    pairs: list[ComparedInput] = []
    lock = threading.Lock()

    def collect(pair: ComparedInput) -> None:
        with lock:
            pairs.append(pair)

    with (
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="face_detector")) as fast,
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")) as slow,
    ):
        job = CompareBatch(fast, slow, [tmp_path], collect, window=2)
        job.start()
        a, b = job.jobs[Side.A], job.jobs[Side.B]
        assert a.wait(30), "A's job ends on its own"
        b_done_when_a_ended = b.counts().done
        assert job.wait(30)
    # B needs 4 rounds of 2 requests x 400 ms: A (its own window and thread) was done long before.
    assert b_done_when_a_ended < 8, "A waited for B"
    assert len(pairs) == 8 and len({p.source for p in pairs}) == 8
    # Each image was read and decoded once for both, though A ran ahead; nothing is kept.
    assert job.reads.reads == 8 and job.reads.kept_bytes == 0
    for pair in pairs:
        assert pair.a.model == "face_detector" and pair.b.model == "slow_faces"
        assert pair.a.source == pair.b.source and pair.ok
        assert pair.match is not None and pair.match.only_b == [0]  # slow_faces always "finds" one
    tally = CompareTally()
    for pair in pairs:
        tally.add(pair)
    summary = tally.summary()
    assert summary["agreement"] == 0.0 and summary["only_b"] == 8
    assert summary["b"]["p50_ms"] >= 400 > summary["a"]["p50_ms"]


def test_cancel_pairs_what_one_side_never_sent(triton: EmbeddedServer, tmp_path: Path) -> None:
    for i in range(30):
        write_rgb(tmp_path / f"img_{i:02d}.png", delayed_image(300))
    pairs: list[ComparedInput] = []
    with (
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="face_detector")) as fast,
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")) as slow,
    ):
        job = CompareBatch(fast, slow, [tmp_path], pairs.append, window=1)
        job.start()
        assert job.jobs[Side.A].wait(30)
        job.cancel()
        assert job.wait(30)
    a_counts, b_counts = job.counts()
    assert a_counts.ok == 30 and b_counts.not_started > 0
    # Every input A answered has its record: B's side cancelled (in flight) or never sent.
    assert len(pairs) == 30 and len({p.source for p in pairs}) == 30
    cancelled = [p for p in pairs if p.b.status.value == "cancelled"]
    assert len(cancelled) >= b_counts.not_started and all(p.match is None for p in cancelled)


def test_live_compare_feeds_both_and_pairs_frames(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "slow.avi"
    make_slow_video(video, frames=60, delay_ms=300)  # 2 s at 30 fps; B takes 300 ms per frame
    pairer = LivePairer(deadline_s=0.2)
    lock = threading.Lock()
    shown: list[LivePair] = []
    calls: list[str] = []
    drained = threading.Event()

    def on_result(side: Side, result: object) -> None:
        with lock:  # the viewer does this on its GUI thread: one at a time
            pair = pairer.result(side, result, time.monotonic())  # type: ignore[arg-type]
            if pair is not None:
                shown.append(pair)

    def on_dropped(side: Side, frame: Frame) -> None:
        with lock:
            pair = pairer.dropped(side, frame, time.monotonic())
            if pair is not None:
                shown.append(pair)

    def on_event(event: LiveEvent, _message: str) -> None:
        calls.append(event.value)

    def on_drained() -> None:
        calls.append("drained")
        drained.set()

    with (
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="face_detector")) as fast,
        TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")) as slow,
    ):
        run = CompareLiveRun(
            video,
            {Side.A: fast, Side.B: slow},
            on_result,
            on_dropped,
            on_event,
            LiveOptions(max_in_flight=1),
            on_drained=on_drained,
        )
        run.start()
        assert drained.wait(30), "both sides' last results were handed on after the end of the file"
        stats = run.stream_stats()
        run.stop()
    # After drained nothing more of the run comes: what still waits for its other side is
    # drawn without it (the viewer does the same).
    with lock:
        shown.extend(pairer.flush())
    assert calls == ["end", "drained"], "drained once, after the end"
    assert all(job.group.unfinished == 0 and job.group.drained for job in run.jobs.values())
    a, b = stats[Side.A], stats[Side.B]
    assert a.offered == b.offered == 60
    assert b.dropped > 30, "B's window is full most of the time: its frames are dropped"
    assert a.completed > 2 * b.completed, "A keeps its own pace"
    indices = [p.index for p in shown]
    assert len(indices) == len(set(indices))
    complete = [p for p in shown if p.missing is None]
    assert len(complete) >= 1 and all(p.match is not None for p in complete)
    for pair in complete:
        assert pair.a is not None and pair.b is not None
        assert pair.a.frame == pair.b.frame == pair.index and pair.a.tag is pair.b.tag
    a_only = [p for p in shown if p.missing is Side.B]
    assert len(a_only) >= a.completed - b.completed - 2, "A's frames are shown without B, marked"
    assert pairer.waiting == 0
