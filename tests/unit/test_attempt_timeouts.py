"""Attempts that get no answer (a paused or wedged server): given up on after the attempt
timeout, the request sent again on a fresh call within its deadline, the late reply of the
first attempt dropped, every request ended once. Driven through the session's channel seam
(tests/fake_channel.py); the real paused server is tests/integration/test_paused_server.py."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from app.inference.core import attempt_timeout
from app.inference.core.attempt_timeout import AttemptTimeout
from app.inference.core.request import Send
from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec, Timeouts
from app.inference.errors import classify_failure
from app.inference.protocol import parse_endpoints, parse_url
from app.inference.result import Status
from tests.fake_channel import MODEL, FakeServer, keep
from tests.integration.session_helpers import Collector, wait_until

IMAGE = np.zeros((48, 64, 3), np.uint8)


def open_session(server: FakeServer, **parts: Any) -> TritonSession:
    return TritonSession(
        SessionSpec(
            endpoints=parse_endpoints("fake:8001"), model=MODEL, channel_factory=server.factory, **parts
        )
    ).open()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield FakeServer(default=keep)


def test_an_unanswered_attempt_is_sent_again_and_its_late_reply_dropped(server: FakeServer) -> None:
    collect = Collector()
    with open_session(server, timeouts=Timeouts(10, attempt_s=0.2)) as session:
        request_id = session.submit(IMAGE, collect)
        first, second = server.wait_for_calls(2)
        assert first.cancelled, "the unanswered attempt is cancelled"
        assert first.request_id == second.request_id == request_id
        assert second.timeout < 10
        second.reply()
        (result,) = collect.wait_for(1)
        # The first attempt's answer arrives after all (a server that cannot cancel it): dropped.
        first.on_done(result=second, error=None)
        assert not wait_until(lambda: len(collect.results) > 1, 0.3)
        assert session.stats.snapshot().retried == 1
    assert result.ok and result.retries == 1 and collect.deliveries[request_id] == 1
    assert len(server.calls) == 2


def test_each_next_attempt_waits_twice_as_long_and_the_deadline_ends_it(server: FakeServer) -> None:
    collect = Collector()
    with open_session(server, timeouts=Timeouts(1.0, attempt_s=0.15)) as session:
        session.submit(IMAGE, collect)
        calls = server.wait_for_calls(3)
        # 0.15 s, then 0.3 s, then 0.6 s would pass the 1 s deadline: the third attempt is the
        # last one, and gRPC's deadline (the call's timeout) is what ends it.
        assert not wait_until(lambda: len(server.calls) > 3, 1.0)
        expired = InferenceServerException("Deadline Exceeded", "StatusCode.DEADLINE_EXCEEDED")
        calls[2].on_done(result=None, error=expired)
        (result,) = collect.wait_for(1)
    assert [c.cancelled for c in calls] == [True, True, False]
    assert result.status is Status.TIMEOUT and result.retries == 2


def test_a_reply_racing_the_attempt_timeout_ends_the_request_once(server: FakeServer) -> None:
    collect = Collector()
    with open_session(server, timeouts=Timeouts(10, attempt_s=0.05)) as session:
        ids = [session.submit(IMAGE, collect) for _ in range(20)]
        # Each attempt answered about when its attempt timeout fires: whichever comes first
        # counts, the other is dropped.
        answered = 0
        while answered < len(ids):
            calls = server.wait_for_calls(answered + 1)
            for call in calls[answered:]:
                call.reply()
            answered = len(calls)
            if len(collect.results) >= len(ids):
                break
        collect.wait_for(len(ids))
        assert not wait_until(lambda: len(collect.results) > len(ids), 0.3)
    assert all(collect.deliveries[i] == 1 for i in ids)
    assert all(r.ok for r in collect.results)


def test_off_waits_for_the_answer(server: FakeServer) -> None:
    collect = Collector()
    with open_session(server, timeouts=Timeouts(10, attempt_s=0.05, resend_unanswered=False)) as session:
        session.submit(IMAGE, collect)
        (call,) = server.wait_for_calls(1)
        assert not wait_until(lambda: len(server.calls) > 1, 0.4)
        call.reply()
        (result,) = collect.wait_for(1)
    assert result.ok and result.retries == 0


def test_the_derived_limit_follows_the_round_trips_within_bounds() -> None:
    clock = AttemptTimeout()
    assert clock.limit(1) == attempt_timeout.MAX_S, "nothing seen yet: the longest"
    for _ in range(attempt_timeout.SAMPLES_NEEDED + attempt_timeout.RECOMPUTE_EVERY):
        clock.observe(0.010)
    assert clock.limit(1) == attempt_timeout.MIN_S, "fast replies: never below the minimum"
    assert clock.limit(2) == 2 * attempt_timeout.MIN_S and clock.limit(3) == 4 * attempt_timeout.MIN_S
    for _ in range(attempt_timeout.SAMPLES_KEPT):
        clock.observe(2.0)
    assert clock.limit(1) == pytest.approx(2.0 * attempt_timeout.P99_FACTOR)
    assert clock.limit(9) == attempt_timeout.MAX_S
    for _ in range(attempt_timeout.SAMPLES_KEPT):
        clock.observe(60.0)
    assert clock.limit(1) == attempt_timeout.MAX_S
    assert AttemptTimeout(5.0).limit(1) == 5.0 and AttemptTimeout(5.0).limit(2) == 10.0
    assert AttemptTimeout(enabled=False).limit(1) is None


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ("Failed to retrieve the response", "StatusCode.INTERNAL"),
        ("Received RST_STREAM with error code 2", "StatusCode.INTERNAL"),
        ("Stream removed", "StatusCode.UNKNOWN"),
        ("Connection reset by peer", "StatusCode.UNKNOWN"),
        # The Python backend's answer to the requests its stub had when it was restarted
        # (after a pause; no message of the model's own): the request was not at fault.
        ("Failed to process the requests.", "StatusCode.INTERNAL"),
    ],
)
def test_lost_replies_and_stream_resets_are_retried(message: str, status: str) -> None:
    failure = classify_failure(InferenceServerException(msg=message, status=status), parse_url("h:8001"))
    assert failure.transient and failure.status is Status.FAILED
    assert message in failure.message


def test_a_python_models_own_error_is_not_retried() -> None:
    message = "Failed to process the requests, message: ValueError: the model says no"
    failure = classify_failure(
        InferenceServerException(msg=message, status="StatusCode.INTERNAL"), parse_url("h:8001")
    )
    assert not failure.transient and "the model says no" in failure.message


def test_an_answered_send_is_not_held_until_its_attempt_timer_fires() -> None:
    server = FakeServer()  # every call answered at once
    collect = Collector()
    with open_session(server, timeouts=Timeouts(60, attempt_s=30)) as session:
        for _ in range(10):
            session.submit(IMAGE, collect)
        collect.wait_for(10)
        server.calls.clear()  # the fake's own record of the calls (and their callbacks)
        for channel in server.channels:
            channel.calls.clear()
        gc.collect()
        # Ten timers wait 30 s each; the sends (and their tensors) are gone already.
        assert not [
            o for o in gc.get_objects() if type(o) is Send
        ]  # type(): some objects raise on isinstance (norfair)
