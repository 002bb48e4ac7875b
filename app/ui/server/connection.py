"""ConnectionController: the viewer's Qt adapter over `ConnectionManager`
(app.pipeline.connection), which owns the embedded server, the session, its health and the
reconnect decisions.

The manager reports from worker threads; its events come here through the GuiBridge, so
every signal fires on the GUI thread, in the order the state changed. `state` and
`session` are what the GUI thread last heard. Blocking steps (server start, session open
and close, probes) run on the executor, never on the GUI thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor

from PySide6.QtCore import QObject, Signal

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.protocol import UrlError
from app.pipeline.connection.local_server import LocalServer
from app.pipeline.connection.manager import ConnectionManager
from app.pipeline.connection.restart_budget import RestartBudget
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
from app.ui.base.bridge import GuiBridge


class ConnectionController(QObject):
    state_changed = Signal(object, str)  # ConnectionState, detail
    # A connect failed on a server that answered: the models it has (to choose another) and
    # their states ({name: "READY", ...}; empty when not known).
    models_listed = Signal(object, object)
    # A connect failed on a port of the other protocol: (the URL that reaches it, why).
    protocol_offered = Signal(str, str)
    # The profile file chosen for a model could not be read: (model, path, why); the model
    # was opened with its detected profile.
    profile_ignored = Signal(str, str, str)
    session_closing = Signal(object)  # the session about to be closed (stop feeding it)
    session_opened = Signal(object)  # the new open TritonSession
    # The embedded server cannot run here at all (no binary, or a frozen build without a
    # usable Python): the reason. Not emitted for a server that tried to start and failed.
    local_server_unavailable = Signal(str)

    def __init__(
        self,
        executor: Executor,
        bridge: GuiBridge,
        spec_for: Callable[[list[str], str | None], SessionSpec],
        session_in_use: Callable[[], bool],
        tritonserver: str | None = None,
    ) -> None:
        """`spec_for(urls, model)`: the SessionSpec the viewer's settings and panel give
        (called here, on the GUI thread). `session_in_use()`: work would be lost by replacing
        the session now (a batch runs); called on a worker thread."""
        super().__init__()
        self._executor = executor
        self._closed = False
        self.state = ConnectionState.IDLE
        self.session: TritonSession | None = None
        self.spec_for = spec_for
        self.manager = ConnectionManager(
            executor,
            bridge.wrap(self._on_event),
            # keep_ports: restarted after a crash, it comes back on the same address, so a
            # batch's session (its requests retrying until their deadlines) is kept.
            local=LocalServer(tritonserver=tritonserver, keep_ports=True),
            session_in_use=session_in_use,
        )

    # -- public ------------------------------------------------------------------
    def connect_to(self, urls: list[str], model: str | None, model_is_hint: bool = False) -> None:
        """Open a session on `urls` ([] = the embedded server, started on first use).
        `model_is_hint`: a remembered model; when the server lacks it, use its default model."""
        try:
            spec = self.spec_for(urls, model)
        except UrlError as e:  # an address typed that cannot be a server's: said as a failed connect
            self.manager.refuse(str(e))
            return
        fallback = self.spec_for(urls, None) if model_is_hint and model is not None else None
        self.manager.connect_to(spec, fallback=fallback)

    def report_unreachable(self, message: str) -> None:
        """A request failed with "cannot reach": show it now rather than at the next probe."""
        self.manager.report_unreachable(message)

    @property
    def target(self) -> SessionSpec | None:
        """The last connect asked for: its urls ([] = the local server) and model."""
        return self.manager.target

    @property
    def urls(self) -> list[str]:
        """The servers connected to (the embedded server's address when local)."""
        return self.manager.urls

    @property
    def server(self) -> EmbeddedServer | None:
        return self.manager.server

    @property
    def opening(self) -> TritonSession | None:
        """A session whose open() is in progress (a connect waiting on the network)."""
        return self.manager.opening

    @property
    def restart_budget(self) -> RestartBudget:
        return self.manager.local.budget

    async def shutdown(self, drain_s: float = 0.2) -> None:
        """Close the session (cancel what is in flight) and stop the embedded server."""
        self._closed = True  # what the manager reports from now on is not for the window
        session, self.session = self.session, None
        if session is not None:
            self.session_closing.emit(session)
        await asyncio.get_running_loop().run_in_executor(self._executor, self.manager.shutdown, drain_s)
        self._set_state(ConnectionState.CLOSED, "closed")

    # -- the manager's events (GUI thread, through the bridge) -------------------------------------
    def _on_event(self, event: ConnectionEvent) -> None:
        if self._closed:
            return
        match event:
            case StateChanged(state, detail):
                self._set_state(state, detail)
            case SessionOpened(session, detail):
                self.session = session
                self._set_state(ConnectionState.CONNECTED, detail)
                self.session_opened.emit(session)
            case SessionClosing(session):
                if self.session is session:
                    self.session = None
                self.session_closing.emit(session)
            case ModelsListed(names, states):
                self.models_listed.emit(list(names), dict(states))
            case ProtocolOffered(url, message):
                self.protocol_offered.emit(url, message)
            case ProfileIgnored(model, path, why):
                self.profile_ignored.emit(model, path, why)
            case LocalServerUnavailable(reason):
                self.local_server_unavailable.emit(reason)

    def _set_state(self, state: ConnectionState, detail: str) -> None:
        self.state = state
        self.state_changed.emit(state, detail)
