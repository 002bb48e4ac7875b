"""A request group's completion, driven through the session's channel seam (tests/fake_channel.py):
per-status counts, and "drained" called exactly once after the last result was handed on,
also when everything is cancelled and when the group is empty."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from tests.fake_channel import MODEL, FakeServer, keep, reply_at_once

IMAGE = np.zeros((48, 64, 3), np.uint8)


class Journal:
    """What happened, in order, from any thread: results (by frame) and drained calls."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.threads: dict[str, str] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)

    def result(self, result: InferenceResult) -> None:
        with self._cond:
            self.events.append(f"{result.status.value}:{result.frame}")
            self._cond.notify_all()

    def wait_for(self, n: int, timeout: float = 5.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.events) >= n, timeout), self.events

    def drained(self) -> None:
        with self._lock:
            self.events.append("drained")
            self.threads["drained"] = threading.current_thread().name

    def count(self, event: str) -> int:
        with self._lock:
            return self.events.count(event)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield FakeServer()


def open_session(server: FakeServer, **parts: Any) -> TritonSession:
    """A session on the fake server; `parts`: the spec's own (timeouts=, limits=...)."""
    return TritonSession(
        SessionSpec(
            endpoints=parse_endpoints("fake:8001"), model=MODEL, channel_factory=server.factory, **parts
        )
    ).open()


def test_drained_comes_once_after_the_last_result_and_counts_each_ending(server: FakeServer) -> None:
    server.default = keep
    journal = Journal()
    with open_session(server) as session:
        group = session.group(8, "test", journal.drained)
        for i in range(4):
            assert group.submit(IMAGE, journal.result, frame=i)
        calls = server.wait_for_calls(4)
        calls[0].reply()
        calls[1].end(error=Exception("boom"))  # the server answered with an error
        calls[2].end(error=Exception("Deadline Exceeded"))
        journal.wait_for(3)
        assert group.wait_drained(0) is False and not group.drained, "open: more may come"
        group.close()
        assert not group.drained, "closed, one still in flight"
        assert group.in_flight == 1 and group.counts.sent == 4
        calls[3].reply()
        assert group.wait_drained(5)
        session.close()  # its workers stopped: nothing more can be handed on
    events = journal.events
    assert events.count("drained") == 1 and events[-1] == "drained", events
    assert sorted(events[:-1]) == ["failed:1", "ok:0", "ok:3", "timeout:2"]
    c = group.counts
    assert (c.sent, c.ok, c.failed, c.timeout, c.cancelled, c.ended) == (4, 2, 1, 1, 0, 4)
    assert group.unfinished == 0 and group.in_flight == 0
    assert journal.threads["drained"].startswith("triton-worker"), "on the thread of the last result"


def test_drained_comes_once_when_everything_is_cancelled(server: FakeServer) -> None:
    server.default = keep
    journal = Journal()
    with open_session(server) as session:
        group = session.group(3, "test", journal.drained)
        for i in range(3):
            assert group.submit(IMAGE, journal.result, frame=i)
        server.wait_for_calls(3)
        assert group.cancel() == 3
        assert group.submit(IMAGE, journal.result, frame=9) is None, "cancelled: takes nothing more"
        assert not group.drained, "cancelled but not closed: the job may still count what it never sent"
        group.count_not_started(5)
        group.close()
        assert group.wait_drained(5)
        group.close()  # idempotent: drained is not called again
        group.cancel()
    assert journal.events.count("drained") == 1 and journal.events[-1] == "drained"
    c = group.counts
    assert (c.sent, c.cancelled, c.not_started, c.ended) == (3, 3, 5, 3)


def test_an_empty_group_drains_at_once_when_closed(server: FakeServer) -> None:
    journal = Journal()
    with open_session(server) as session:
        group = session.group(2, "empty", journal.drained)
        assert not group.drained
        group.close()
        # Called in close() itself, on this thread: nothing was left to wait for.
        assert group.drained and journal.events == ["drained"]
        assert journal.threads["drained"] == threading.current_thread().name
        assert group.submit(IMAGE, journal.result) is None, "closed: takes nothing more"
    assert journal.events == ["drained"] and group.counts.sent == 0


def test_local_results_are_counted_and_handed_on_before_drained(server: FakeServer) -> None:
    server.default = reply_at_once
    journal = Journal()
    with open_session(server, limits=Limits(send_in_caller=True)) as session:
        group = session.group(2, "batch", journal.drained)
        group.deliver_local(InferenceResult.local_failure("bad.png", "bad.png: not an image"), journal.result)
        assert group.submit(IMAGE, journal.result, frame=1)
        group.close()
        assert group.wait_drained(5)
    assert journal.events[-1] == "drained" and journal.count("failed:None") == 1
    c = group.counts
    assert (c.sent, c.ok, c.failed, c.ended) == (1, 1, 1, 2)


def test_a_callback_that_raises_still_ends_the_request_and_drains(server: FakeServer) -> None:
    journal = Journal()

    def explode(_result: InferenceResult) -> None:
        raise RuntimeError("a bug in the caller")

    with open_session(server) as session:
        group = session.group(2, "test", journal.drained)
        assert group.submit(IMAGE, explode)
        group.close()
        assert group.wait_drained(5)
    assert journal.events == ["drained"] and group.counts.ok == 1 and group.unfinished == 0


def test_results_counted_when_handed_on_and_drained_waits_for_the_slowest_callback(
    server: FakeServer,
) -> None:
    # A result is counted as it ends (just before its callback); drained waits for the
    # callback to return, however long it takes.
    server.default = reply_at_once
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []
    drained = threading.Event()

    def slow(result: InferenceResult) -> None:
        seen.append(group.counts.ok)
        entered.set()
        release.wait(5)

    with open_session(server) as session:
        group = session.group(2, "test", drained.set)
        assert group.submit(IMAGE, slow)
        group.close()
        assert entered.wait(5)
        # The callback is running (held until released): its request is not finished yet.
        assert group.unfinished == 1 and not group.drained and not drained.is_set()
        release.set()
        assert group.wait_drained(5) and drained.is_set()
    assert seen == [1]
