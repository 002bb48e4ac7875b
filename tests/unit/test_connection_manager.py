"""ConnectionManager without Qt: the events in the order the state changed, the reconnect
decisions, abandoning a connect that hangs, the shutdown. Sessions open through the channel
seam (tests/fake_channel.py); the liveness probes use the same kind of channel."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.inference.core.session import SessionState, TritonSession
from app.inference.core.spec import ProfileSource, SessionSpec
from app.inference.protocol import UrlError, parse_endpoints
from app.pipeline.connection.manager import ConnectionManager
from app.pipeline.connection.state import (
    ConnectionEvent,
    ConnectionState,
    ModelsListed,
    ProfileIgnored,
    SessionClosing,
    SessionOpened,
    StateChanged,
)
from app.ui.widgets.banner import split_detail
from tests.fake_channel import MODEL, FakeServer


class Events:
    """What the manager reported, with the closing session's state when it was reported."""

    def __init__(self) -> None:
        self.seen: list[ConnectionEvent] = []
        self.closing_states: list[SessionState] = []
        self._cond = threading.Condition()

    def __call__(self, event: ConnectionEvent) -> None:
        with self._cond:
            self.seen.append(event)
            if isinstance(event, SessionClosing):
                self.closing_states.append(event.session.state)
            self._cond.notify_all()

    def wait_for(
        self, condition: Callable[[ConnectionEvent], bool], what: str, after: int = -1, timeout: float = 20.0
    ) -> int:
        """The index of the first event after index `after` that meets `condition`."""

        def found() -> int | None:
            return next((i for i, e in enumerate(self.seen) if i > after and condition(e)), None)

        with self._cond:
            assert self._cond.wait_for(lambda: found() is not None, timeout), f"no {what} in {self.seen}"
            index = found()
            assert index is not None
            return index

    def states(self) -> list[ConnectionState]:
        with self._cond:
            return [e.state for e in self.seen if isinstance(e, StateChanged)]

    def opened(self, after: int = -1) -> int:
        return self.wait_for(lambda e: isinstance(e, SessionOpened), "session", after)


def state_is(state: ConnectionState) -> Callable[[ConnectionEvent], bool]:
    return lambda e: isinstance(e, StateChanged) and e.state is state


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def manager_and_events() -> Iterator[tuple[ConnectionManager, Events]]:
    events = Events()
    with ThreadPoolExecutor(4) as executor:
        manager = ConnectionManager(executor, events)
        try:
            yield manager, events
        finally:
            manager.shutdown(0.0)


def spec_for(server: FakeServer, model: str | None = MODEL, **changes: object) -> SessionSpec:
    spec = SessionSpec(endpoints=parse_endpoints("fake:8001"), model=model, channel_factory=server.factory)  # type: ignore[arg-type]
    return dataclasses.replace(spec, **changes)  # type: ignore[arg-type]


def test_connect_reports_connecting_then_the_session_and_a_switch_closes_the_old_one_after_saying_so(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    manager.connect_to(spec_for(server))
    first = events.opened()
    opened = events.seen[first]
    assert isinstance(opened, SessionOpened) and opened.detail == f"fake:8001 · model {MODEL}"
    assert events.states() == [ConnectionState.CONNECTING]
    assert manager.state is ConnectionState.CONNECTED and manager.session is opened.session
    assert manager.urls == ["fake:8001"] and manager.target is not None and manager.target.model == MODEL

    manager.connect_to(spec_for(server))
    second = events.opened(after=first)
    closing = [e for e in events.seen[first:second] if isinstance(e, SessionClosing)]
    assert [e.session for e in closing] == [opened.session]
    assert events.closing_states == [SessionState.OPEN]  # reported before the close started
    assert opened.session.state is SessionState.CLOSED
    new = events.seen[second]
    assert isinstance(new, SessionOpened) and new.session is manager.session is not opened.session


def test_an_address_that_cannot_be_a_servers_fails_the_connect_and_closes_the_session_open(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    manager.connect_to(spec_for(server))
    opened = events.seen[events.opened()]
    assert isinstance(opened, SessionOpened)
    with pytest.raises(UrlError) as bad:
        parse_endpoints("ftp://h:21")  # what the viewer's panel was given
    manager.refuse(str(bad.value))
    failed = events.wait_for(state_is(ConnectionState.FAILED), "failure")
    assert (
        events.seen[failed].detail
        == "ftp://h:21: unknown scheme 'ftp://' (use http://, https://, grpc:// or HOST:PORT for gRPC)"
    )  # type: ignore[union-attr]
    assert opened.session.state is SessionState.CLOSED and manager.session is None


def test_a_remembered_model_the_server_lacks_opens_its_default_and_an_asked_one_fails_with_the_list(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    manager.connect_to(spec_for(server, "gone"), fallback=spec_for(server, None))
    index = events.opened()
    opened = events.seen[index]
    assert isinstance(opened, SessionOpened) and opened.session.info is not None
    assert opened.session.info.name == MODEL
    assert not any(isinstance(e, ModelsListed) for e in events.seen)

    manager.connect_to(spec_for(server, "gone"))
    failed = events.wait_for(state_is(ConnectionState.FAILED), "failure")
    assert "model 'gone' not found" in events.seen[failed].detail  # type: ignore[union-attr]
    listed = [e for e in events.seen if isinstance(e, ModelsListed)]
    assert listed == [ModelsListed((MODEL,), ((MODEL, "READY"),))], "the names and their states"
    assert manager.session is None


def test_an_unreadable_profile_file_is_reported_and_the_detected_profile_used(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events], tmp_path: Path
) -> None:
    manager, events = manager_and_events
    missing = tmp_path / "missing.toml"
    manager.connect_to(spec_for(server, profile=ProfileSource(file=missing)))
    opened = events.seen[events.opened()]
    ignored = [e for e in events.seen if isinstance(e, ProfileIgnored)]
    assert len(ignored) == 1 and ignored[0].model == MODEL and ignored[0].path == str(missing)
    assert "not found" in ignored[0].why
    assert isinstance(opened, SessionOpened) and opened.session.profile.labels == ("face",)


def test_an_outage_is_noticed_and_the_return_rebuilds_the_session_unless_it_is_in_use(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    in_use = [False]
    manager.session_in_use = lambda: in_use[0]
    manager.connect_to(spec_for(server))
    first = events.opened()
    first_session = manager.session

    server.live = False
    lost = events.wait_for(state_is(ConnectionState.DISCONNECTED), "the outage")
    detail = events.seen[lost].detail  # type: ignore[union-attr]
    assert detail.startswith("the server does not answer; retrying every 0.5 s (fake:8001"), detail
    # The text follows the outage: how long it has lasted, the newest answer (Details).
    later = events.wait_for(
        lambda e: isinstance(e, StateChanged) and "has not answered for 1 s" in e.detail,
        "the outage's age",
        after=lost,
    )
    lead, raw = split_detail(events.seen[later].detail)  # type: ignore[union-attr]
    assert lead.startswith("the server has not answered for 1 s") and raw.startswith("fake:8001"), raw
    assert manager.state is ConnectionState.DISCONNECTED
    server.live = True
    again = events.opened(after=first)  # a new session: fresh channels, the model read again
    assert manager.session is not first_session and manager.state is ConnectionState.CONNECTED
    reconnecting = [e for e in events.seen[lost:again] if isinstance(e, StateChanged)]
    assert reconnecting[-1].detail.startswith("reconnecting to fake:8001")

    in_use[0] = True  # a batch runs: its requests retry; the session is kept
    kept = manager.session
    server.live = False
    events.wait_for(state_is(ConnectionState.DISCONNECTED), "the second outage", after=again)
    server.live = True
    back = events.wait_for(
        lambda e: isinstance(e, StateChanged) and e.detail.endswith("(back)"), "the server back", after=again
    )
    assert manager.session is kept and not any(
        isinstance(e, SessionOpened) for e in events.seen[again + 1 : back]
    )


def test_report_unreachable_only_disconnects_a_connected_session(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    manager.report_unreachable("cannot reach fake:8001")
    assert manager.state is ConnectionState.IDLE and events.seen == []
    manager.connect_to(spec_for(server))
    events.opened()
    manager.report_unreachable("cannot reach fake:8001")
    assert manager.state is ConnectionState.DISCONNECTED and manager.detail == "cannot reach fake:8001"


def test_a_connect_that_hangs_is_abandoned_at_once_by_the_next(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    with socket.socket() as silent:  # accepts TCP connections, never answers gRPC
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        manager.connect_to(SessionSpec(endpoints=parse_endpoints(f"127.0.0.1:{silent.getsockname()[1]}")))
        deadline = time.monotonic() + 10
        while manager.opening is None and time.monotonic() < deadline:
            time.sleep(0.01)
        hanging = manager.opening
        assert isinstance(hanging, TritonSession) and hanging.state is SessionState.OPENING
        manager.connect_to(spec_for(server))
        index = events.opened()
        # Its open() fails as soon as it is abandoned, not when its liveness check (5 s)
        # would have given up.
        deadline = time.monotonic() + 4.0
        while hanging.state is not SessionState.CLOSED and time.monotonic() < deadline:
            time.sleep(0.01)
    assert hanging.state is SessionState.CLOSED
    # The abandoned attempt said nothing after it was superseded: no failure shown.
    assert ConnectionState.FAILED not in events.states()
    assert isinstance(events.seen[index], SessionOpened) and manager.opening is None


def test_shutdown_closes_the_session_after_saying_so_and_is_final(
    server: FakeServer, manager_and_events: tuple[ConnectionManager, Events]
) -> None:
    manager, events = manager_and_events
    manager.connect_to(spec_for(server))
    session = events.seen[events.opened()].session  # type: ignore[union-attr]
    manager.shutdown(0.0)
    manager.shutdown(0.0)
    assert session.state is SessionState.CLOSED and manager.session is None
    assert events.closing_states == [SessionState.OPEN]
    assert (
        events.states()[-1] is ConnectionState.CLOSED and events.states().count(ConnectionState.CLOSED) == 1
    )
    seen = len(events.seen)
    manager.connect_to(spec_for(server))  # closed: nothing happens any more
    time.sleep(0.2)  # a connect would have reported CONNECTING by now
    assert len(events.seen) == seen
