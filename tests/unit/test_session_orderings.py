"""Rare orderings, driven deterministically through the session's channel seam (a fake channel
written for the test, tests/fake_channel.py): what a real server only does now and then."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.inference.core.session import SessionState, TritonSession
from app.inference.core.spec import Limits, SessionSpec, Timeouts
from app.inference.protocol import parse_endpoints
from app.inference.result import ErrorKind, InferenceResult, Status
from app.pipeline.live import LiveJob
from app.sources.frame import Frame
from tests.fake_channel import BOX, MODEL, FakeServer, Reply, keep, reply_at_once, unavailable
from tests.integration.session_helpers import Collector, wait_until

IMAGE = np.zeros((48, 64, 3), np.uint8)


def open_session(server: FakeServer, **parts: Any) -> TritonSession:
    """A session on the fake server; `parts`: the spec's own (timeouts=, limits=...)."""
    return TritonSession(
        SessionSpec(
            endpoints=parse_endpoints("fake:8001"), model=MODEL, channel_factory=server.factory, **parts
        )
    ).open()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield FakeServer()


def test_a_reply_before_submit_returns_is_delivered_once_with_its_id(server: FakeServer) -> None:
    collect = Collector()
    with open_session(server, limits=Limits(send_in_caller=True)) as session:
        group = session.group(4)
        request_id = group.submit(IMAGE, collect, source="early")
        # The call ended inside send(), i.e. before submit() returned the id.
        (call,) = server.calls
        assert call.ended
        (result,) = collect.wait_for(1)
        assert result.request_id == request_id
        group.close()
        assert group.wait_drained(5) and group.in_flight == 0 and group.counts.ok == 1
    assert result.ok and result.detections[0].box == BOX
    assert collect.deliveries[request_id] == 1


def test_a_retry_pending_when_the_session_closes_ends_once_as_cancelled(server: FakeServer) -> None:
    server.behaviours = [lambda call: call.end(error=unavailable())]
    collect = Collector()
    session = open_session(server, timeouts=Timeouts(30, retry_backoff_s=5.0))
    request_id = session.submit(IMAGE, collect)
    server.wait_for_calls(1)
    deadline = time.monotonic() + 5
    while session.stats.snapshot().retried == 0 and time.monotonic() < deadline:
        time.sleep(0.005)  # the first attempt failed; its retry now waits out its back-off
    started = time.monotonic()
    session.close(drain_timeout=0.1)
    (result,) = collect.wait_for(1)
    assert time.monotonic() - started < 5.0, "close did not wait for the back-off"
    assert result.request_id == request_id and result.status is Status.CANCELLED
    assert result.error_kind is ErrorKind.CANCELLED
    assert len(server.calls) == 1 and collect.deliveries[request_id] == 1


@pytest.mark.parametrize("first", ["cancel", "reply"])
def test_a_cancel_racing_a_reply_ends_the_request_once(server: FakeServer, first: str) -> None:
    server.default = keep
    collect = Collector()
    with open_session(server) as session:
        group = session.group(4)
        request_id = group.submit(IMAGE, collect)
        assert request_id is not None
        (call,) = server.wait_for_calls(1)
        if first == "cancel":
            assert session.cancel(request_id)
            # The server's reply was already on its way when the cancel came: it still arrives.
            call.on_done(result=Reply(), error=None)
        else:
            call.reply()
            collect.wait_for(1)
            assert not session.cancel(request_id), "finished: nothing to cancel"
        (result,) = collect.wait_for(1)
        group.close()
        assert group.wait_drained(5)
    # Closed: the session's workers have stopped, so a duplicate would be here by now.
    assert len(collect.results) == 1 and group.counts.ended == 1
    assert result.status is (Status.CANCELLED if first == "cancel" else Status.OK)


def test_a_timeout_racing_a_reply_ends_the_request_once(server: FakeServer) -> None:
    server.default = keep
    collect = Collector()
    with open_session(server) as session:
        group = session.group(4)
        group.submit(IMAGE, collect)
        (call,) = server.wait_for_calls(1)
        # gRPC reports the deadline, then the server's answer arrives anyway.
        deadline = Exception("Deadline Exceeded")
        threads = [
            threading.Thread(target=lambda: call.on_done(result=None, error=deadline)),
            threading.Thread(target=call.reply),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (result,) = collect.wait_for(1)
        group.close()
        assert group.wait_drained(5)
    # Closed: the session's workers have stopped, so a duplicate would be here by now.
    assert len(collect.results) == 1 and group.counts.ended == 1
    assert result.status in (Status.TIMEOUT, Status.OK)


def test_an_outage_shorter_than_the_deadline_fails_nothing(server: FakeServer) -> None:
    server.behaviours = [lambda call: call.end(error=unavailable())] * 4
    with open_session(server, timeouts=Timeouts(10, retry_backoff_s=0.01)) as session:
        result = session.infer(IMAGE)
        assert session.stats.snapshot().retried == 4
    assert result.ok and result.retries == 4 and len(server.calls) == 5


def test_an_outage_longer_than_the_deadline_fails_as_unreachable(server: FakeServer) -> None:
    server.default = lambda call: call.end(error=unavailable())
    with open_session(server, timeouts=Timeouts(0.3, retry_backoff_s=0.01)) as session:
        result = session.infer(IMAGE)
    assert result.status is Status.FAILED and result.error_kind is ErrorKind.UNREACHABLE
    assert "nothing is listening" in (result.error or "")
    assert len(server.calls) >= 3


def test_cancelling_a_group_wakes_a_submitter_waiting_for_a_session_slot(server: FakeServer) -> None:
    server.default = keep
    collect = Collector()
    with open_session(server, limits=Limits(max_in_flight=2)) as session:
        holder = session.group(2)
        assert holder.submit(IMAGE, collect) and holder.submit(IMAGE, collect)  # the session is full
        waiting = session.group(4)
        returned: list[str | None] = []
        submitter = threading.Thread(target=lambda: returned.append(waiting.submit(IMAGE, collect)))
        submitter.start()
        assert wait_until(lambda: session.submitters_waiting == 1), "waits for a session slot"
        assert submitter.is_alive()
        waiting.cancel()
        submitter.join(2)
        assert not submitter.is_alive() and returned == [None]
        assert holder.cancel() == 2
    assert [r.status for r in collect.wait_for(2)] == [Status.CANCELLED] * 2


def test_closing_wakes_a_submitter_waiting_for_its_groups_slot(server: FakeServer) -> None:
    server.default = keep
    session = open_session(server)
    group = session.group(1)
    group.submit(IMAGE, lambda _r: None)
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            group.submit(IMAGE, lambda _r: None)
        except BaseException as e:
            errors.append(e)

    submitter = threading.Thread(target=submit)
    submitter.start()
    assert wait_until(lambda: group.window.waiting == 1), "waits for its group's slot"
    session.close(drain_timeout=0)
    submitter.join(2)
    assert not submitter.is_alive()
    assert session.state is SessionState.CLOSED
    assert len(errors) <= 1  # SessionClosedError, or None returned: never stuck


def test_a_live_offer_never_blocks_when_a_batch_holds_the_session(server: FakeServer) -> None:
    server.default = keep
    shown: list[InferenceResult] = []
    with open_session(server, limits=Limits(max_in_flight=4)) as session:
        batch = session.group(4)
        for _ in range(4):
            assert batch.submit(IMAGE, lambda _r: None)
        live = LiveJob(session, shown.append, max_in_flight=2)
        started = time.monotonic()
        offered = [live.offer(Frame(i, IMAGE, "cam", time.monotonic())) for i in range(100)]
        assert time.monotonic() - started < 5.0
        assert not any(offered) and live.stats().dropped == 100
        live.stop()
        batch.cancel()


def test_stop_wakes_a_frame_by_frame_offer(server: FakeServer) -> None:
    server.default = keep
    with open_session(server) as session:
        live = LiveJob(session, lambda _r: None, max_in_flight=1, drop_when_busy=False)
        assert live.offer(Frame(0, IMAGE, "file", time.monotonic()))
        waiting = threading.Thread(target=live.offer, args=(Frame(1, IMAGE, "file", time.monotonic()),))
        waiting.start()
        assert wait_until(lambda: live.group.window.waiting == 1), (
            "frame by frame: waits for the stream's slot"
        )
        assert waiting.is_alive()
        live.stop()
        waiting.join(2)
        assert not waiting.is_alive()
        assert live.group.wait_drained(2)
        assert live.stats().dropped == 0, "a stop is not a drop"


def test_replies_keep_their_order_of_ids_under_reply_at_once(server: FakeServer) -> None:
    server.default = reply_at_once
    collect = Collector()
    with open_session(server) as session:
        ids = [session.submit(IMAGE, collect, frame=i) for i in range(50)]
        results = collect.wait_for(50)
    assert {r.request_id: r.frame for r in results} == {rid: i for i, rid in enumerate(ids)}
    assert max(collect.deliveries.values()) == 1
