"""ConnectionController: the embedded server, the current TritonSession and its health.

Every blocking step (starting tritonserver, TritonSession.open/close, liveness probes)
runs on the executor; the GUI thread only awaits them on the qasync loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from concurrent.futures import Executor
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.inference.channel import ConnectionOptions
from app.inference.errors import SessionError
from app.inference.health import LivenessProbe
from app.inference.result import ErrorKind
from app.inference.session import TritonSession
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.errors import TritonNotFoundError
from app.ui.connection_state import ConnectionState
from app.ui.tasks import TaskSet

log = logging.getLogger(__name__)

HEALTH_INTERVAL_MS = 2000
SWITCH_DRAIN_S = 0.3  # an old session's requests get this long to finish when switching
DEFAULT_MODEL = "face_detector"


class ConnectionController(QObject):
    state_changed = Signal(str, str)  # ConnectionState, detail
    # A connect failed on a server that answered: the models it has (to choose another).
    models_listed = Signal(object)
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

    # -- public ------------------------------------------------------------------
    def connect_to(self, urls: list[str], model: str | None, model_is_hint: bool = False) -> None:
        """Open a session on `urls` ([] = the embedded server, started on first use).
        `model_is_hint`: a remembered model; when the server lacks it, use its default model."""
        self._generation += 1
        self._abandon_connect()
        self._tasks.spawn(self._connect(self._generation, urls, model, model_is_hint), name="connect")

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
    async def _connect(self, generation: int, urls: list[str], model: str | None, hint: bool) -> None:
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
        self._set_state(ConnectionState.CONNECTING, f"connecting to {', '.join(urls)}…")
        session = self._opening = TritonSession(urls, model, options=options, **self.speed)
        try:
            await loop.run_in_executor(self._executor, session.open)
        except Exception as e:  # whatever happens, the state says so: never stuck "connecting"
            if generation != self._generation:
                return  # superseded or closing: close() interrupted the connect
            kind = e.kind if isinstance(e, SessionError) else ErrorKind.SERVER
            if hint and model is not None and kind is ErrorKind.NOT_FOUND:
                await self._connect(generation, urls, None, False)
                return
            if not isinstance(e, SessionError):
                log.exception("connecting to %s failed", urls)
            if isinstance(e, SessionError) and e.models:
                self.models_listed.emit(list(e.models))
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

    async def _ensure_server(self, loop: asyncio.AbstractEventLoop, generation: int) -> list[str]:
        if self.server is not None and self.server.running:
            return [self.server.grpc_url]
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

    # -- health --------------------------------------------------------------------
    def _start_probe(self, urls: list[str], options: ConnectionOptions) -> None:
        self._probe = LivenessProbe(urls, options)
        self._health_timer.start()

    def _probe_now(self) -> None:
        if self._probing or self._probe is None or self._shutting_down:
            return
        self._probing = True
        self._tasks.spawn(self._probe_once(self._probe, self._generation), name="health probe")

    async def _probe_once(self, probe: LivenessProbe, generation: int) -> None:
        try:
            live, message = await asyncio.get_running_loop().run_in_executor(self._executor, probe.check)
        finally:
            self._probing = False
        if generation != self._generation or self.session is None:
            return
        if not live and self.state is ConnectionState.CONNECTED:
            self._set_state(
                ConnectionState.DISCONNECTED, f"server not answering: {message}; retrying every 2 s"
            )
        elif live and self.state is ConnectionState.DISCONNECTED:
            assert self.session.info is not None
            self._set_state(
                ConnectionState.CONNECTED, f"{', '.join(self.urls)} · model {self.session.info.name} (back)"
            )

    def _set_state(self, state: ConnectionState, detail: str) -> None:
        self.state = state
        self.state_changed.emit(state.value, detail)
