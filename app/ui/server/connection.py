"""ConnectionController: the embedded server, the current TritonSession and its health.

Every blocking step (starting tritonserver, TritonSession.open/close, liveness probes)
runs on the executor; the GUI thread only awaits them on the qasync loop.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.inference.core.session import TritonSession
from app.inference.errors import SessionError
from app.inference.introspection.health import LivenessProbe
from app.inference.profiles.profile import ProfileError, load_profile_file
from app.inference.result import ErrorKind
from app.inference.transports.channel import ConnectionOptions
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.errors import TritonNotFoundError
from app.ui.base.tasks import TaskSet
from app.ui.server.connection_state import ConnectionState

log = logging.getLogger(__name__)

HEALTH_INTERVAL_MS = 2000
# While disconnected the probe looks more often: a server that is back is reconnected to
# within about this long of being ready (plus opening the session).
RECOVERY_INTERVAL_MS = 500
# An embedded server that dies is started again, at most this many times in this window.
MAX_LOCAL_RESTARTS = 3
LOCAL_RESTART_WINDOW_S = 300.0
SWITCH_DRAIN_S = 0.3  # an old session's requests get this long to finish when switching
DEFAULT_MODEL = "face_detector"


@dataclass(frozen=True)
class Target:
    """What was asked for, to connect to again after an outage: urls ([] = the local server)."""

    urls: list[str]
    model: str | None


class ConnectionController(QObject):
    state_changed = Signal(object, str)  # ConnectionState, detail
    # A connect failed on a server that answered: the models it has (to choose another).
    models_listed = Signal(object)
    # The profile file given by `profile_for` could not be read: (model, path, why); the
    # model was opened with its detected profile.
    profile_ignored = Signal(str, str, str)
    session_closing = Signal(object)  # the session about to be closed (stop feeding it)
    session_opened = Signal(object)  # the new open TritonSession
    # The embedded server cannot run here at all (no binary, or a frozen build without a
    # usable Python): the reason. Not emitted for a server that tried to start and failed.
    local_server_unavailable = Signal(str)

    def __init__(
        self,
        executor: Executor,
        tasks: TaskSet,
        tritonserver: str | None = None,
        remote_options: ConnectionOptions | None = None,
    ) -> None:
        super().__init__()
        self._remote_options = remote_options
        self._executor = executor
        self._tasks = tasks
        self._tritonserver = tritonserver
        self.server: EmbeddedServer | None = None
        self.session: TritonSession | None = None
        self._opening: TritonSession | None = None  # a session whose open() is in progress
        self.urls: list[str] = []
        self.state = ConnectionState.IDLE
        self._generation = 0
        self._probe: LivenessProbe | None = None
        self._probing = False
        self._shutting_down = False
        self._server_stop_requested = False
        # How requests travel (TritonSession's transport, client_batch, batch_delay_ms).
        self.speed: dict[str, Any] = {}
        self._health_timer = QTimer(self)
        self._health_timer.setInterval(HEALTH_INTERVAL_MS)
        self._health_timer.timeout.connect(self._probe_now)
        self.target: Target | None = None  # the last connect asked for (kept for recovery)
        self._local_restarts: collections.deque[float] = collections.deque()
        # Set by the viewer. `profile_for(model)`: what to open `model` with: profile overrides
        # already read, a profile file to read (on the executor), or None (detected profile).
        # `session_in_use()`: work would be lost by replacing the session now (a batch runs):
        # after an outage such a session is kept (its requests retry) instead of rebuilt.
        self.profile_for: Callable[[str | None], dict[str, Any] | Path | None] = lambda _model: None
        self.session_in_use: Callable[[], bool] = lambda: False

    # -- public ------------------------------------------------------------------
    def connect_to(self, urls: list[str], model: str | None, model_is_hint: bool = False) -> None:
        """Open a session on `urls` ([] = the embedded server, started on first use).
        `model_is_hint`: a remembered model; when the server lacks it, use its default model."""
        self._local_restarts.clear()  # asked for by the user: the restart budget starts again
        self._start_connect(urls, model, model_is_hint, automatic=False)

    def _start_connect(self, urls: list[str], model: str | None, hint: bool, automatic: bool) -> None:
        self._generation += 1
        self._abandon_connect()
        self.target = Target(list(urls), model)
        coro = self._connect(self._generation, urls, model, hint, automatic)
        self._tasks.spawn(coro, name="reconnect" if automatic else "connect")

    def _abandon_connect(self) -> None:
        """A connect still waiting on the network is not wanted any more: closing its session
        makes the blocked call fail at once (no network wait; safe on the GUI thread)."""
        if self._opening is not None:
            self._opening.close(0.0)

    def local_urls(self) -> list[str]:
        return [self.server.grpc_url] if self.server is not None and self.server.running else []

    def report_unreachable(self, message: str) -> None:
        """A request failed with "cannot reach": show it now rather than at the next probe."""
        if self.state is ConnectionState.CONNECTED:
            self._set_state(ConnectionState.DISCONNECTED, message)

    async def shutdown(self, drain_s: float = 0.2) -> None:
        """Close the session (cancel what is in flight) and stop the embedded server."""
        self._shutting_down = True
        self._generation += 1
        self._abandon_connect()
        self._health_timer.stop()
        loop = asyncio.get_running_loop()
        session, self.session = self.session, None
        steps = []
        if session is not None:
            self.session_closing.emit(session)
            steps.append(loop.run_in_executor(self._executor, functools.partial(session.close, drain_s)))
        if self._probe is not None:
            steps.append(loop.run_in_executor(self._executor, self._probe.close))
        steps.append(loop.run_in_executor(self._executor, self._stop_server))
        await asyncio.gather(*steps, return_exceptions=True)
        self._set_state(ConnectionState.CLOSED, "closed")

    # -- steps -----------------------------------------------------------------------
    async def _connect(
        self, generation: int, urls: list[str], model: str | None, hint: bool, automatic: bool = False
    ) -> None:
        """`automatic`: a reconnect after an outage. If it fails the state stays DISCONNECTED
        and probing goes on (the next success tries again); a user's connect ends FAILED."""
        loop = asyncio.get_running_loop()
        await self._close_session(loop)
        options = self._remote_options
        if not urls:
            urls = await self._ensure_server(loop, generation)
            if not urls:
                return
            model = model or DEFAULT_MODEL
            options = None  # the embedded server speaks plain gRPC and wants no headers
        if generation != self._generation:
            return
        verb = "reconnecting to" if automatic else "connecting to"
        self._set_state(ConnectionState.CONNECTING, f"{verb} {', '.join(urls)}…")
        overrides = await self._profile_overrides(loop, model)
        if generation != self._generation:
            return
        session = self._opening = TritonSession(
            urls, model, options=options, profile_overrides=overrides, **self.speed
        )
        try:
            await loop.run_in_executor(self._executor, session.open)
        except Exception as e:  # whatever happens, the state says so: never stuck "connecting"
            if generation != self._generation:
                return  # superseded or closing: close() interrupted the connect
            kind = e.kind if isinstance(e, SessionError) else ErrorKind.SERVER
            if hint and model is not None and kind is ErrorKind.NOT_FOUND:
                await self._connect(generation, urls, None, False, automatic)
                return
            if not isinstance(e, SessionError):
                log.exception("connecting to %s failed", urls)
            if isinstance(e, SessionError) and e.models:
                self.models_listed.emit(list(e.models))
            if automatic and kind in (ErrorKind.UNREACHABLE, ErrorKind.NOT_FOUND, ErrorKind.TIMEOUT):
                # Back but not ready yet (models still loading), or gone again: keep probing.
                self.urls = urls
                self._set_state(ConnectionState.DISCONNECTED, f"{e}; retrying")
                self._start_probe(urls, session.options, recovering=True)
                return
            self._set_state(ConnectionState.FAILED, str(e) or type(e).__name__)
            return
        finally:
            if self._opening is session:
                self._opening = None
        if generation != self._generation:  # superseded (or closing) while opening
            await loop.run_in_executor(self._executor, functools.partial(session.close, 0.0))
            return
        self.session, self.urls = session, urls
        self._start_probe(urls, session.options)
        assert session.info is not None
        self._set_state(ConnectionState.CONNECTED, f"{', '.join(urls)} · model {session.info.name}")
        self.session_opened.emit(session)

    async def _profile_overrides(
        self, loop: asyncio.AbstractEventLoop, model: str | None
    ) -> dict[str, Any] | None:
        source = self.profile_for(model)
        if not isinstance(source, Path):
            return source
        try:  # a file: read on the executor (the GUI thread never waits on the disk)
            return await loop.run_in_executor(self._executor, load_profile_file, source)
        except ProfileError as e:
            self.profile_ignored.emit(model or "", str(source), str(e))
            return None

    async def _ensure_server(self, loop: asyncio.AbstractEventLoop, generation: int) -> list[str]:
        if self.server is not None and self.server.running:
            return [self.server.grpc_url]
        if self.server is not None:  # it died: remove what it left (regions, work folder)
            dead, self.server = self.server, None
            await loop.run_in_executor(self._executor, functools.partial(dead.stop, 0.0))
        if generation != self._generation:
            return []
        self._set_state(ConnectionState.STARTING, "Starting local Triton server…")
        try:
            self.server = EmbeddedServer(model_repository(), tritonserver=self._tritonserver)
            await loop.run_in_executor(self._executor, self._start_server, self.server)
        except TritonNotFoundError as e:
            self.server = None
            if generation == self._generation:
                self._set_state(ConnectionState.FAILED, f"no local Triton server: {e}")
                self.local_server_unavailable.emit(str(e))
            return []
        except Exception as e:
            if generation == self._generation:
                self._set_state(ConnectionState.FAILED, f"the local Triton server did not start: {e}")
            return []
        return [self.server.grpc_url] if generation == self._generation else []

    def _start_server(self, server: EmbeddedServer) -> None:
        # Executor thread. A close during start-up calls stop() from another thread;
        # stop again here so a process spawned after that stop does not outlive us.
        if self._server_stop_requested:
            return
        try:
            server.start()
        finally:
            if self._server_stop_requested:
                server.stop(timeout=2.0)

    def _stop_server(self) -> None:
        # Executor thread. Triton's graceful exit (SIGINT) takes ~4 s here (model unload,
        # stubs); the viewer owns this server, keeps nothing in it and must exit within
        # about a second, so stop(timeout=0) kills the whole process group at once, then
        # reaps it and removes its shared-memory regions and work folder.
        self._server_stop_requested = True
        if self.server is not None:
            self.server.stop(timeout=0.0)

    async def _close_session(self, loop: asyncio.AbstractEventLoop) -> None:
        self._health_timer.stop()
        session, self.session = self.session, None
        probe, self._probe = self._probe, None
        if probe is not None:
            await loop.run_in_executor(self._executor, probe.close)
        if session is not None:
            self.session_closing.emit(session)
            await loop.run_in_executor(self._executor, functools.partial(session.close, SWITCH_DRAIN_S))

    # -- health and recovery ---------------------------------------------------------------
    def _start_probe(self, urls: list[str], options: ConnectionOptions, recovering: bool = False) -> None:
        self._probe = LivenessProbe(urls, options)
        self._health_timer.start(RECOVERY_INTERVAL_MS if recovering else HEALTH_INTERVAL_MS)

    def _probe_now(self) -> None:
        if self._probing or self._probe is None or self._shutting_down:
            return
        if self._local_server_died():
            self._restart_local_server()
            return
        self._probing = True
        self._tasks.spawn(self._probe_once(self._probe, self._generation), name="health probe")

    async def _probe_once(self, probe: LivenessProbe, generation: int) -> None:
        try:
            live, message = await asyncio.get_running_loop().run_in_executor(self._executor, probe.check)
        finally:
            self._probing = False
        if generation != self._generation or self._shutting_down:
            return
        if not live and self.state is ConnectionState.CONNECTED:
            self._set_state(ConnectionState.DISCONNECTED, f"server not answering: {message}; retrying")
        elif live and self.state is ConnectionState.DISCONNECTED:
            self._recover()
        self._health_timer.setInterval(
            RECOVERY_INTERVAL_MS if self.state is ConnectionState.DISCONNECTED else HEALTH_INTERVAL_MS
        )

    def _recover(self) -> None:
        """The server answers again. A session in use (a batch runs, its requests retrying)
        is kept; otherwise it is rebuilt: fresh channels (no reconnect back-off, no server
        marked down) and the model read again (the server may have restarted with others)."""
        session = self.session
        if session is not None and session.info is not None and self.session_in_use():
            detail = f"{', '.join(self.urls)} · model {session.info.name} (back)"
            self._set_state(ConnectionState.CONNECTED, detail)
            return
        target = self.target
        if target is None:
            return
        model = session.info.name if session is not None and session.info is not None else target.model
        self._start_connect(target.urls, model, False, automatic=True)

    def _local_server_died(self) -> bool:
        return (
            self.target is not None
            and not self.target.urls
            and self.server is not None
            and not self.server.running
            and not self._server_stop_requested
        )

    def _restart_local_server(self) -> None:
        """The embedded server died (crash, OOM killer, killed by hand): start it again, at
        most MAX_LOCAL_RESTARTS times in LOCAL_RESTART_WINDOW_S; then say so and wait for
        the user (the panel's Reconnect button)."""
        assert self.target is not None
        now = time.monotonic()
        while self._local_restarts and now - self._local_restarts[0] > LOCAL_RESTART_WINDOW_S:
            self._local_restarts.popleft()
        if len(self._local_restarts) >= MAX_LOCAL_RESTARTS:
            self._health_timer.stop()
            minutes = LOCAL_RESTART_WINDOW_S / 60
            self._set_state(
                ConnectionState.FAILED,
                f"the local Triton server stopped again ({len(self._local_restarts) + 1} times within "
                f"{minutes:.0f} minutes); it is not restarted any more. Press Reconnect to start it "
                "again (`python -m app serve` shows the server's own errors)",
            )
            return
        self._local_restarts.append(now)
        model = self.session.info.name if self.session is not None and self.session.info else None
        message = f"the local Triton server stopped; restarting it ({len(self._local_restarts)} of "
        message += f"{MAX_LOCAL_RESTARTS} restarts allowed within {LOCAL_RESTART_WINDOW_S / 60:.0f} minutes)"
        log.warning("%s", message)
        self._set_state(ConnectionState.DISCONNECTED, message)
        self._start_connect([], model or self.target.model, False, automatic=True)

    def _set_state(self, state: ConnectionState, detail: str) -> None:
        self.state = state
        self.state_changed.emit(state, detail)
