"""Completion against the real server: a request group's "drained" comes exactly once, after
the last result was handed on, with client batching; a batch job's "finished" and a live
run's "drained" are that signal (also for an empty batch; a cancelled one: test_batch_job)."""

from __future__ import annotations

import threading
from pathlib import Path

import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult, Status
from app.pipeline.batch import BatchCounts, BatchJob
from app.pipeline.live import LiveEvent, LiveOptions, LiveRun
from app.server.embedded import EmbeddedServer
from tests.integration.session_helpers import delayed_image, wait_until
from tests.media import make_index_video
from tests.ui.viewer_fixtures import image_folder


class Journal:
    """Results and completion signals in the order they happened, from any thread."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.results: list[InferenceResult] = []
        self.finished: list[BatchCounts] = []
        self.done = threading.Event()
        self._lock = threading.Lock()

    def result(self, result: InferenceResult) -> None:
        with self._lock:
            self.results.append(result)
            self.events.append("result")

    def event(self, event: LiveEvent, _message: str) -> None:
        with self._lock:
            self.events.append(event.value)

    def drained(self) -> None:
        with self._lock:
            self.events.append("drained")
        self.done.set()

    def batch_finished(self, counts: BatchCounts) -> None:
        with self._lock:
            self.finished.append(counts)
            self.events.append("drained")
        self.done.set()


def test_drained_comes_once_after_the_last_result_with_client_batching(triton: EmbeddedServer) -> None:
    journal = Journal()
    # Batches of 4 fill at once (the delay is only for a batch that never fills).
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url),
            model="slow_faces",
            delivery=Delivery(client_batch=4, batch_delay_ms=1000),
            limits=Limits(send_in_caller=True),
        )
    ) as session:
        assert session.batching == 4
        group = session.group(8, "batched", journal.drained)
        ids = [group.submit(delayed_image(300), journal.result, frame=i) for i in range(8)]
        assert all(ids)
        # Two members of the batches in flight are cancelled: their calls go on for the others.
        assert session.cancel(ids[1]) and session.cancel(ids[6])
        group.close()
        assert group.wait_drained(30)
        session.close()  # its workers stopped: nothing more can be handed on
    assert journal.events == ["result"] * 8 + ["drained"]
    assert sorted(r.request_id for r in journal.results) == sorted(ids), "each request ended once"
    statuses = {r.request_id: r.status for r in journal.results}
    assert statuses[ids[1]] is statuses[ids[6]] is Status.CANCELLED
    ok = [r for r in journal.results if r.ok]
    # Batches of 4 (3 when a cancel came before its batch was sent: that member drops out).
    batches = [(r.frame, r.timing.batch) for r in ok if r.timing]
    assert len(ok) == 6 and all(b in (3, 4) for _, b in batches), batches
    c = group.counts
    assert (c.sent, c.ok, c.cancelled, c.ended, group.unfinished) == (8, 6, 2, 8, 0)


def test_a_batch_finishes_once_after_its_last_result(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "in", 5, skimage.data.coffee()[::8, ::8].copy(), corrupt=1)
    journal = Journal()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        job = BatchJob(session, [folder], journal.result, window=2, on_finished=journal.batch_finished)
        counts = job.run()
        assert job.finished and job.wait(0)
    assert journal.events == ["result"] * 6 + ["drained"]
    assert journal.finished == [counts]
    assert (counts.total, counts.ok, counts.failed, counts.done) == (6, 5, 1, 6)


def test_an_empty_batch_finishes_at_once(triton: EmbeddedServer) -> None:
    journal = Journal()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        counts = BatchJob(session, [], journal.result, on_finished=journal.batch_finished).run()
    assert journal.events == ["drained"] and journal.finished == [counts]
    assert counts.total == counts.done == 0


def test_a_live_run_drains_once_after_the_end_of_its_file(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    make_index_video(video, frames=20, fps=30)
    journal = Journal()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        run = LiveRun(
            video,
            session,
            journal.result,
            journal.event,
            LiveOptions(max_in_flight=2, frame_by_frame=True),
            on_drained=journal.drained,
        )
        run.start()
        assert journal.done.wait(30)
        stream = run.stats().stream
        run.stop()
    # The end first, then every result still on its way, then drained, once.
    assert journal.events.count("drained") == 1 and journal.events[-1] == "drained"
    assert journal.events.count("end") == 1
    assert stream is not None and stream.completed == stream.submitted == 20 == len(journal.results)


def test_a_live_run_stopped_before_its_end_never_drains(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    make_index_video(video, frames=300, fps=30)
    journal = Journal()
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        run = LiveRun(video, session, journal.result, journal.event, on_drained=journal.drained)
        run.start()
        assert wait_until(lambda: len(journal.results) >= 2)
        job = run.job
        assert job is not None
        assert run.stop(5.0)
        # Its job drained (every request ended, cancelled or answered)...
        assert job.group.wait_drained(5)
    # ...but the stream did not end: the run says nothing (a stop is not the end of a file).
    assert "drained" not in journal.events and "end" not in journal.events
