"""ConnectionManager: the current session on a server (or on the embedded one), its health,
and what happens when the server goes away. Qt-free; the viewer's ConnectionController
turns its events into signals.

Threads, and why:
- `connect_to()` and `report_unreachable()` return at once: a GUI thread may call them.
- Every blocking step (starting the embedded server, opening and closing sessions, liveness
  probes) runs on the executor; `shutdown()` blocks, so callers run it there too.
- One timer thread (created with the first probe) schedules the probes.
- Each connect has a `RunToken`; the next connect (or the shutdown) cancels it, which
  closes a session whose open() is still blocked on the network. A step holding an old
  token lets its result go.
- The state changes under one lock, and each change is reported to `on_event` while the
  lock is held, so events arrive in the order the state changed: `on_event` must only hand
  them off (the viewer posts them through its GuiBridge to the GUI thread).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from app.inference.core.open_session import open_session
from app.inference.core.scheduler import DelayedCalls
from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.errors import SessionError
from app.inference.introspection.health import LivenessProbe
from app.inference.profiles.profile import ProfileError
from app.inference.protocol import parse_url
from app.inference.result import ErrorKind
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.pipeline.connection.decisions import (
    HEALTH_INTERVAL_S,
    RECOVERY_INTERVAL_S,
    AfterFailedConnect,
    AfterProbe,
    after_failed_connect,
    after_probe,
    keep_session_when_back,
    outage_text,
    probe_interval,
)
from app.pipeline.connection.local_server import LocalServer, LocalServerStopped
from app.pipeline.connection.run_token import RunToken
from app.pipeline.connection.state import (
    ConnectionEvent,
    ConnectionState,
    LocalServerUnavailable,
    ModelsListed,
    ProfileIgnored,
    ProtocolOffered,
    SessionClosing,
    SessionOpened,
    StateChanged,
)
from app.server.embedded import EmbeddedServer
from app.server.errors import TritonNotFoundError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "face_detector"  # what the embedded server is opened with when no model is named
SWITCH_DRAIN_S = 0.3  # an old session's requests get this long to finish when switching


class ConnectionManager:
    def __init__(
        self,
        executor: Executor,
        on_event: Callable[[ConnectionEvent], None],
        *,
        local: LocalServer | None = None,
        session_in_use: Callable[[], bool] = lambda: False,
    ) -> None:
        """`session_in_use()`: work would be lost by replacing the session now (a batch
        runs): after an outage such a session is kept (its requests retry) instead of
        rebuilt. Called on a worker thread: it must be safe there."""
        self._executor = executor
        self._on_event = on_event
        self.local = local or LocalServer()
        self.session_in_use = session_in_use
        self._lock = threading.Lock()
        self._token: RunToken | None = None
        self._closed = False
        self._probe: LivenessProbe | None = None
        self._timer: DelayedCalls | None = None
        self.state = ConnectionState.IDLE
        self.detail = ""
        self._lost_at = 0.0  # (monotonic) when the current outage began
        self.session: TritonSession | None = None  # the open session (None while connecting)
        self.opening: TritonSession | None = None  # a session whose open() is in progress
        self.target: SessionSpec | None = None  # the last connect asked for (kept for recovery)
        self.urls: list[str] = []  # the servers connected to (the embedded one's address too)

    # -- public (any thread) ------------------------------------------------------------
    def connect_to(self, spec: SessionSpec, *, fallback: SessionSpec | None = None) -> None:
        """Open a session as `spec` says (no URL: the embedded server, started on first use),
        replacing the current one. `fallback`: what to open when the server lacks the model
        (a remembered model, not one the user asked for). Asked for by the user: the
        embedded server's restart budget starts again."""
        self.local.budget.reset()
        self._start_connect(spec, fallback, automatic=False)

    def refuse(self, message: str) -> None:
        """A connect asked for that cannot even start (a server address that cannot be one):
        as a connect failing at once, the current session closes and the state says why."""
        with self._lock:
            if self._closed:
                return
            old = self._token
            token = self._token = RunToken("connect")
        if old is not None:
            old.cancel()
        self._submit(self._refused, token, message)

    def report_unreachable(self, message: str) -> None:
        """A request failed with "cannot reach": say so now rather than at the next probe."""
        with self._lock:
            if not self._closed and self.state is ConnectionState.CONNECTED:
                self._update(ConnectionState.DISCONNECTED, message)

    @property
    def server(self) -> EmbeddedServer | None:
        """The embedded server, once one was started."""
        return self.local.server

    def shutdown(self, drain_s: float = 0.2) -> None:
        """Blocking; idempotent. Close the session (what is in flight gets `drain_s`, then is
        cancelled), stop probing and stop the embedded server."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            token, self._token = self._token, None
            session, self.session = self.session, None
            probe, self._probe = self._probe, None
            timer, self._timer = self._timer, None
            if session is not None:
                self._emit(SessionClosing(session))
        if token is not None:
            token.cancel()  # a connect in progress: its session's open() fails at once
        if timer is not None:
            timer.stop()
        if session is not None:
            session.close(drain_s)
        if probe is not None:
            probe.close()
        self.local.stop(timeout=0.0)
        with self._lock:
            self._update(ConnectionState.CLOSED, "closed")

    # -- connecting (worker threads) ------------------------------------------------------------
    def _start_connect(self, spec: SessionSpec, fallback: SessionSpec | None, automatic: bool) -> None:
        with self._lock:
            if self._closed:
                return
            old = self._token
            token = self._token = RunToken("reconnect" if automatic else "connect")
            self.target = spec
        if old is not None:
            old.cancel()
        self._submit(self._connect_guarded, token, spec, fallback, automatic)

    def _refused(self, token: RunToken, message: str) -> None:
        self._close_current(token)
        self._set_state(token, ConnectionState.FAILED, message)

    def _connect_guarded(
        self, token: RunToken, spec: SessionSpec, fallback: SessionSpec | None, automatic: bool
    ) -> None:
        try:
            self._connect(token, spec, fallback, automatic)
        except Exception as e:  # whatever happens, the state says so: never stuck "connecting"
            log.exception("connecting failed")
            self._set_state(token, ConnectionState.FAILED, str(e) or type(e).__name__)

    def _connect(
        self, token: RunToken, spec: SessionSpec, fallback: SessionSpec | None, automatic: bool
    ) -> None:
        """`automatic`: a reconnect after an outage. If it fails the state stays DISCONNECTED
        and probing goes on (the next success tries again); a user's connect ends FAILED."""
        self._close_current(token)
        if spec.embedded:
            resolved = self._start_local(token, spec)
            if resolved is None:
                return
            spec = resolved
        verb = "reconnecting to" if automatic else "connecting to"
        if not self._set_state(token, ConnectionState.CONNECTING, f"{verb} {', '.join(spec.urls)}…"):
            return
        try:
            session = self._open(token, spec)
        except Exception as e:
            self._connect_failed(token, e, spec, fallback, automatic)
            return
        assert session.info is not None
        with self._lock:
            current = self._current(token)
            if current:
                self.session, self.urls = session, list(spec.urls)
                self._probe = _probe_for(spec)
                self.state, self.detail = (
                    ConnectionState.CONNECTED,
                    f"{', '.join(self.urls)} · model {session.info.name}",
                )
                self._emit(SessionOpened(session, self.detail))
        if not current:  # superseded (or closing) while opening
            session.close(0.0)
            return
        self._schedule_probe(token, HEALTH_INTERVAL_S)

    def _start_local(self, token: RunToken, spec: SessionSpec) -> SessionSpec | None:
        """The embedded server's address in `spec` (started now if it is not running); None
        (and the state says why) when it cannot run."""
        if not self.local.running and not self._set_state(
            token, ConnectionState.STARTING, "the local Triton server…"
        ):
            return None
        try:
            url = self.local.ensure()
        except LocalServerStopped:
            return None
        except TritonNotFoundError as e:
            with self._lock:
                if self._current(token):
                    self._update(ConnectionState.FAILED, f"no local Triton server: {e}")
                    self._emit(LocalServerUnavailable(str(e)))
            return None
        except Exception as e:
            self._set_state(token, ConnectionState.FAILED, f"the local Triton server did not start: {e}")
            return None
        # The embedded server speaks plain gRPC and wants no headers.
        return dataclasses.replace(
            spec,
            endpoints=(parse_url(url),),
            model=spec.model or DEFAULT_MODEL,
            connection=ConnectionOptions(),
        )

    def _open(self, token: RunToken, spec: SessionSpec) -> TritonSession:
        created: list[TritonSession] = []
        opened = threading.Event()

        def adopt(session: TritonSession) -> None:
            created.append(session)
            with self._lock:
                self.opening = session

            def abandon() -> None:
                # While open() waits on the network: make it fail at once (no network wait).
                # Once open, the connect step itself closes it (after saying so).
                if not opened.is_set():
                    session.close(0.0)

            token.on_cancel(abandon)

        try:
            try:
                session = open_session(spec, on_created=adopt)
            except ProfileError as e:
                if spec.profile.file is None:
                    raise
                # A profile file that cannot be read: the detected profile, and say so.
                self._emit_if_current(token, ProfileIgnored(spec.model or "", str(spec.profile.file), str(e)))
                plain = dataclasses.replace(spec, profile=dataclasses.replace(spec.profile, file=None))
                session = open_session(plain, on_created=adopt)
            opened.set()
            return session
        finally:
            with self._lock:
                if self.opening in created:
                    self.opening = None

    def _connect_failed(
        self,
        token: RunToken,
        error: Exception,
        spec: SessionSpec,
        fallback: SessionSpec | None,
        automatic: bool,
    ) -> None:
        if not self._is_current(token):
            return  # superseded or closing: closing the session interrupted the connect
        kind = error.kind if isinstance(error, SessionError) else ErrorKind.SERVER
        decision = after_failed_connect(kind, automatic=automatic, model_is_hint=fallback is not None)
        if decision is AfterFailedConnect.OPEN_DEFAULT_MODEL and fallback is not None:
            self._connect(token, fallback, None, automatic)
            return
        if not isinstance(error, SessionError):
            log.error("connecting to %s failed", spec.urls, exc_info=error)
        for event in events_of(error):
            self._emit_if_current(token, event)
        if decision is AfterFailedConnect.KEEP_PROBING:
            # Back but not ready yet (models still loading), or gone again: keep probing.
            with self._lock:
                if not self._current(token):
                    return
                self.urls = list(spec.urls)
                self._probe = _probe_for(spec)
                self._update(ConnectionState.DISCONNECTED, self._outage(str(error)))
            self._schedule_probe(token, RECOVERY_INTERVAL_S)
            return
        self._set_state(token, ConnectionState.FAILED, str(error) or type(error).__name__)

    def _close_current(self, token: RunToken) -> None:
        """Close the open session and its probe (only the newest connect: a superseded one doesn't)."""
        with self._lock:
            if not self._current(token):
                return
            session, self.session = self.session, None
            probe, self._probe = self._probe, None
            if session is not None:
                self._emit(SessionClosing(session))  # before the close: stop feeding it
        if probe is not None:
            probe.close()
        if session is not None:
            session.close(SWITCH_DRAIN_S)

    # -- health and recovery (timer thread, then worker threads) ---------------------------------
    def _schedule_probe(self, token: RunToken, delay_s: float) -> None:
        with self._lock:
            if not self._current(token):
                return
            if self._timer is None:
                self._timer = DelayedCalls("connection-health")
            timer = self._timer
        timer.call_later(delay_s, lambda: self._submit(self._probe_step, token))

    def _probe_step(self, token: RunToken) -> None:
        with self._lock:
            if not self._current(token):
                return
            probe = self._probe
            embedded = self.target is not None and self.target.embedded
        if embedded:
            allowed = self.local.claim_restart()
            if allowed is not None:
                self._local_server_died(token, allowed)
                return
        if probe is None:
            return
        live, message = probe.check()
        with self._lock:
            if not self._current(token):
                return
            decision = after_probe(self.state, live)
            if decision is AfterProbe.LOST or (self.state is ConnectionState.DISCONNECTED and not live):
                detail = self._outage(message)  # how long, and the newest answer (Details)
                if detail != self.detail:
                    self._update(ConnectionState.DISCONNECTED, detail)
            state = self.state
        if decision is AfterProbe.BACK and self._recover(token):
            return  # a new connect: its own probes follow
        self._schedule_probe(token, probe_interval(state))

    def _recover(self, token: RunToken) -> bool:
        """The server answers again: keep the session in use, or connect afresh (True)."""
        with self._lock:
            session, target, urls = self.session, self.target, self.urls
        if keep_session_when_back(session is not None and session.info is not None, self.session_in_use()):
            assert session is not None and session.info is not None
            detail = f"{', '.join(urls)} · model {session.info.name} (back)"
            return not self._set_state(token, ConnectionState.CONNECTED, detail)
        if target is None:
            return False
        self._reconnect(session, target)
        return True

    def _local_server_died(self, token: RunToken, allowed: bool) -> None:
        """The embedded server died (crash, OOM killer, killed by hand): start it again
        within the restart budget; beyond it, say so and wait for the user (Reconnect)."""
        budget = self.local.budget
        if not allowed:
            self._set_state(
                token,
                ConnectionState.FAILED,
                f"the local Triton server stopped again ({budget.describe_exhausted()}); it is not "
                "restarted any more. Press Reconnect to start it again (`python -m app serve` shows "
                "the server's own errors)",
            )
            return
        message = f"the local Triton server stopped; restarting it ({budget.describe_use()})"
        log.warning("%s", message)
        if not self._set_state(token, ConnectionState.DISCONNECTED, message):
            return
        with self._lock:
            session, target = self.session, self.target
        if (
            session is not None
            and session.info is not None
            and self.local.keeps_address
            and self.session_in_use()
        ):
            self._restart_under(token, session)
            return
        if target is not None:
            self._reconnect(session, target)

    def _restart_under(self, token: RunToken, session: TritonSession) -> None:
        """The server comes back on the same address under a session in use (a batch runs):
        its requests retry until their deadlines meanwhile, and the session is kept."""
        try:
            self.local.ensure()
        except LocalServerStopped:
            return
        except Exception as e:
            self._set_state(
                token, ConnectionState.FAILED, f"the local Triton server did not start again: {e}"
            )
            return
        assert session.info is not None
        detail = f"{', '.join(self.urls)} · model {session.info.name} (local server restarted)"
        if self._set_state(token, ConnectionState.CONNECTED, detail):
            self._schedule_probe(token, HEALTH_INTERVAL_S)

    def _reconnect(self, session: TritonSession | None, target: SessionSpec) -> None:
        """Connect again as last asked, to the model that was open (the server's default may
        have changed meanwhile)."""
        model = session.info.name if session is not None and session.info is not None else target.model
        self._start_connect(dataclasses.replace(target, model=model), None, automatic=True)

    # -- plumbing ---------------------------------------------------------------------------------
    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        # RuntimeError: the executor is shut down (the owner is closing).
        with contextlib.suppress(RuntimeError):
            self._executor.submit(_logged, fn, *args)

    def _current(self, token: RunToken) -> bool:
        """(Lock held.) The token is the newest and the manager is not closing."""
        return not self._closed and token is self._token and not token.cancelled

    def _is_current(self, token: RunToken) -> bool:
        with self._lock:
            return self._current(token)

    def _set_state(self, token: RunToken, state: ConnectionState, detail: str) -> bool:
        """Change the state for the current attempt only; False when `token` is stale."""
        with self._lock:
            if not self._current(token):
                return False
            self._update(state, detail)
            return True

    def _outage(self, raw: str) -> str:
        """(Lock held.) The outage's text now; its clock starts when the state turns Disconnected."""
        now = time.monotonic()
        if self.state is not ConnectionState.DISCONNECTED:
            self._lost_at = now
        return outage_text(raw, now - self._lost_at)

    def _update(self, state: ConnectionState, detail: str) -> None:
        """(Lock held.)"""
        self.state, self.detail = state, detail
        self._emit(StateChanged(state, detail))

    def _emit_if_current(self, token: RunToken, event: ConnectionEvent) -> None:
        with self._lock:
            if self._current(token):
                self._emit(event)

    def _emit(self, event: ConnectionEvent) -> None:
        """(Lock held: events leave in the order the state changed.)"""
        try:
            self._on_event(event)
        except Exception:
            log.exception("a connection event handler failed")


def _probe_for(spec: SessionSpec) -> LivenessProbe:
    # Its own channels (never queued behind inference traffic), of the session's kind.
    return LivenessProbe(list(spec.endpoints), spec.connection, spec.channel_factory or open_channel)


def _logged(fn: Callable[..., None], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        log.exception("connection step %s failed", getattr(fn, "__name__", fn))


def events_of(error: Exception) -> list[ModelsListed | ProtocolOffered]:
    """What a failed connect still tells: the models the server listed, a protocol to offer."""
    if not isinstance(error, SessionError):
        return []
    events: list[ModelsListed | ProtocolOffered] = []
    if error.models:
        events.append(ModelsListed(tuple(error.models), tuple(sorted(error.states.items()))))
    if error.offer:
        events.append(ProtocolOffered(error.offer, str(error)))
    return events
