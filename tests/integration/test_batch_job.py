"""BatchJob against the real server: one result per input, local failures in the same shape,
counts, cancel; and a batch holding the window while a live video plays."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import ErrorKind, InferenceResult, Status
from app.pipeline.batch import BatchCounts, BatchJob, VideoPolicy
from app.pipeline.live import LiveOptions, LiveRun
from app.server.embedded import EmbeddedServer
from tests.integration.session_helpers import Collector, delayed_image, wait_until
from tests.media import make_index_video
from tests.ui.viewer_fixtures import image_folder, write_png


def test_one_result_per_input_local_failures_included(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "in", 3, skimage.data.coffee()[::8, ::8].copy(), corrupt=1)
    (folder / "notes.txt").write_text("not media")
    missing = tmp_path / "missing.png"
    collect = Collector()
    thumbs: list[str] = []
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        job = BatchJob(
            session, [folder, missing], collect, window=2, on_thumbnail=lambda key, _t: thumbs.append(key)
        )
        counts = job.run()
    by_name = {Path(r.source or "").name: r for r in collect.results}
    assert sorted(by_name) == [
        "corrupt_0.png",
        "img_0000.png",
        "img_0001.png",
        "img_0002.png",
        "missing.png",
        "notes.txt",
    ]
    assert len(collect.results) == 6, "one result per input, each delivered once"
    assert (counts.total, counts.ok, counts.failed, counts.skipped, counts.done) == (6, 3, 2, 1, 6)
    for name in ("corrupt_0.png", "missing.png", "notes.txt"):
        local = by_name[name]
        assert local.request_id is None and local.latency_ms is None and local.detections == []
        assert name in (local.error or "")
    assert (
        by_name["notes.txt"].status is Status.SKIPPED and by_name["notes.txt"].error_kind is ErrorKind.SKIPPED
    )
    assert by_name["missing.png"].status is Status.FAILED and "does not exist" in (
        by_name["missing.png"].error or ""
    )
    assert by_name["corrupt_0.png"].to_record()["status"] == "failed"
    assert sorted(Path(k).name for k in thumbs) == ["img_0000.png", "img_0001.png", "img_0002.png"]


def test_videos_are_every_frame_or_refused(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    make_index_video(video, frames=5, fps=10)
    frames, refused = Collector(), Collector()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        assert BatchJob(session, [video], frames, videos=VideoPolicy.FRAMES).run().ok == 5
        assert BatchJob(session, [video], refused, videos=VideoPolicy.REFUSE).run().failed == 1
    assert sorted(r.frame for r in frames.results) == [0, 1, 2, 3, 4]
    assert "live preview" in (refused.results[0].error or "")


def test_cancel_ends_what_is_in_flight_and_counts_what_never_started(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "slow", 30, delayed_image(500))
    collect = Collector()
    finished: list[tuple[int, BatchCounts]] = []  # results handed on by then, counts
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        job = BatchJob(
            session,
            [folder],
            collect,
            window=4,
            on_finished=lambda c: finished.append((len(collect.results), c)),
        )
        job.start()
        assert wait_until(lambda: job.group.in_flight == 4, 10), "the job fills its window"
        job.cancel()
        assert job.wait(10)
        counts = job.counts()
    assert counts.cancelled == 4 and counts.ok == 0 and counts.not_started == 26
    assert [r.status for r in collect.results] == [Status.CANCELLED] * 4
    assert counts.done + counts.not_started == counts.total == 30
    assert finished == [(4, counts)], "finished once, after the last cancelled result"


@pytest.mark.slow
@pytest.mark.parametrize("batch_window", [8, 10], ids=["batch-leaves-room", "batch-holds-the-session"])
def test_a_big_batch_never_freezes_a_live_video(
    triton: EmbeddedServer, tmp_path: Path, batch_window: int
) -> None:
    """3,000 images on the slow model hold their window (or the whole session's) while a
    video plays live on the same session: the capture thread keeps publishing, live
    results keep coming when there is room for them, and stop returns at once."""
    folder = tmp_path / "big"
    folder.mkdir()
    write_png(folder / "img_00000.png", delayed_image(300))
    for i in range(1, 3000):  # the same bytes 3,000 times: cheap to make, each a real input
        (folder / f"img_{i:05d}.png").hardlink_to(folder / "img_00000.png")
    video = tmp_path / "live.avi"
    make_index_video(video, frames=300, fps=30)
    live_results: list[InferenceResult] = []
    events: list[str] = []
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url), model="slow_faces", limits=Limits(max_in_flight=10)
        )
    ) as session:
        batch = BatchJob(session, [folder], lambda _r: None, window=batch_window)
        batch.start()
        assert wait_until(lambda: batch.group.in_flight == batch_window, 20), "the batch holds its window"
        run = LiveRun(
            video,
            session,
            live_results.append,
            lambda event, message: events.append(f"{event}: {message}"),
            LiveOptions(max_in_flight=2, loop=True),
        )
        run.start()
        captured_then = wait_until(lambda: run.stats().capture.captured >= 15, 10)
        assert captured_then, "the capture thread publishes frames while the batch runs"
        first = run.stats().capture.captured
        assert wait_until(lambda: run.stats().capture.captured >= first + 15, 10), "and keeps publishing"
        # a frame being decided (decoding, waiting for room) is offered once submitted or
        # dropped, so the stream's count may trail the capture's by the frame in hand
        assert wait_until(lambda: (s := run.stats().stream) is not None and s.offered >= 30, 10)
        stream = run.stats().stream
        assert stream is not None
        if batch_window < session.spec.limits.max_in_flight:
            assert wait_until(lambda: len(live_results) >= 3, 10), "live frames get their own slots"
        else:
            assert stream.dropped > 0, "no room: live frames are dropped, never waited for"
        stopping = threading.Thread(target=run.stop, args=(5.0,))
        stopping.start()
        stopping.join(5.0)
        assert not stopping.is_alive(), "stop returned while the batch still held the window"
        assert not run.capture.is_alive
        batch.cancel()
        assert batch.wait(15)
        assert batch.counts().not_started > 2000
    assert events == []


def test_local_failure_records_match_request_records_in_shape(triton: EmbeddedServer) -> None:
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        sent = session.infer(np.zeros((8, 8, 3), np.uint8), source="x.png")
    local = InferenceResult.local_failure("y.png", "y.png: the file is empty")
    # The same keys in the same order; a record that is not ok adds its error_kind.
    assert [k for k in local.to_record() if k != "error_kind"] == list(sent.to_record())
    assert local.to_record()["error_kind"] == "bad_input"
    assert local.to_record()["request_id"] is None and local.to_record()["ok"] is False


def test_an_interrupt_counts_every_input_never_sent(triton: EmbeddedServer, tmp_path: Path) -> None:
    # Ctrl-C (SIGINT: KeyboardInterrupt in the feeding thread) while the job waits for its
    # window: the inputs behind it were never sent and must be counted as not started, so
    # the counts add up to the inputs announced.
    import signal

    folder = tmp_path / "many"
    folder.mkdir()
    write_png(folder / "0.png", np.full((16, 16, 3), 5, np.uint8))  # slow_faces: 50 ms each
    for i in range(1, 300):
        (folder / f"{i:03d}.png").symlink_to(folder / "0.png")
    results: list[InferenceResult] = []

    def on_result(result: InferenceResult) -> None:
        results.append(result)
        if len(results) == 3:
            signal.raise_signal(signal.SIGINT)  # delivered to the main thread: the feeder

    announced: list[int] = []
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model="slow_faces")
    ) as session:
        job = BatchJob(session, [folder], on_result, window=2, on_started=announced.append)
        with pytest.raises(KeyboardInterrupt):
            job.run()
        counts = job.counts()
    assert announced == [300] and counts.total == 300
    assert counts.not_started > 250
    assert counts.done + counts.not_started == 300 == len(results) + counts.not_started
