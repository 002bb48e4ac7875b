"""ConnectionUi: the connection as the window shows it and as the user changes it. It owns the
`ConnectionController` (built here with the one place the viewer turns its options, settings and
panel into a `SessionSpec`), and answers its events on the GUI thread: the server panel, the
status bar and the connection's banner; the local server missing (the last remote server, else a
dialog asking for one); a port of the other protocol (an offer to switch); a failed connect on a
server that answered (its models to choose from); the transport chosen (a reconnect)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

import shiboken6
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QInputDialog, QMessageBox

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, ProfileSource, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from app.model_states import ModelEntry
from app.pipeline.connection.manager import DEFAULT_MODEL
from app.pipeline.connection.state import ConnectionState
from app.ui.base.bridge import GuiBridge
from app.ui.base.settings import ViewerSettings
from app.ui.main_window import MainWindow
from app.ui.server.connection import ConnectionController
from app.ui.server.protocol_offer import offer_protocol
from app.ui.server.server_dialog import ask_for_server
from app.ui.server.server_panel import LOCAL_SERVER, parse_urls
from app.ui.state.viewer_state import ViewerState
from app.ui.viewer_options import ViewerOptions
from app.ui.widgets.banner import Context, split_detail


class ConnectionUi(QObject):
    # What the connection shows changed (its state, the models offered): the inputs that wait
    # for a server or a model say what they wait for again.
    changed = Signal()

    def __init__(
        self,
        window: MainWindow,
        state: ViewerState,
        settings: ViewerSettings,
        options: ViewerOptions,
        executor: Executor,
        bridge: GuiBridge,
        profile_for: Callable[[str | None], ProfileSource],
        session_in_use: Callable[[], bool],
    ) -> None:
        """`profile_for(model)`: the profile a model is opened with; `session_in_use()`: work
        would be lost by replacing the session now (called on a worker thread)."""
        super().__init__()
        self.window, self.state, self.settings, self.options = window, state, settings, options
        self._profile_for = profile_for
        self._executor, self._bridge = executor, bridge
        self.controller = ConnectionController(
            executor, bridge, self.session_spec, session_in_use, options.tritonserver
        )
        self.delivery = Delivery()  # how requests travel: the server panel's choice
        self.failure: str | None = None  # the last connection failure (for --screenshot)
        self.models_listed: list[str] = []  # offered by a server whose connect failed
        self._connection_lost = False  # failed or disconnected since the last connect
        self._shown_state = ConnectionState.IDLE  # the state last shown (an outage is updated)
        self._asked_for_server = False
        self.server_dialog: QInputDialog | None = None
        self.protocol_offer: QMessageBox | None = None  # "that is Triton's HTTP port: connect over HTTP?"
        c, panel = self.controller, window.server_panel
        c.state_changed.connect(self._on_state)
        c.session_opened.connect(self._on_session_opened)
        c.local_server_unavailable.connect(self._on_local_server_unavailable)
        c.models_listed.connect(self._on_models_listed)
        c.protocol_offered.connect(self._on_protocol_offered)
        c.profile_ignored.connect(
            lambda model, path, why: settings.warn_ignored(
                f"profiles/{model}", path, f"cannot be used: {why}"
            )
        )
        panel.connect_requested.connect(self.connect_urls)
        panel.model_chosen.connect(self.connect_model)
        panel.transport_chosen.connect(self._on_transport_chosen)

    # -- what a session is opened with ----------------------------------------------------------
    def session_spec(self, urls: list[str], model: str | None) -> SessionSpec:
        """The one place the viewer turns its options, settings and panel into a SessionSpec:
        `urls` ([] = the embedded server), `model`, its profile, the transport and client
        batching chosen, TLS and headers for remote servers. The addresses are parsed here
        (UrlError for one that cannot be a server's)."""
        if not urls:
            model = model or DEFAULT_MODEL  # the embedded server's model: its profile applies
        return SessionSpec(
            endpoints=parse_endpoints(urls),
            model=model,
            profile=self._profile_for(model),
            delivery=self.delivery,
            connection=self.options.connection or ConnectionOptions(),
        )

    def session_urls(self) -> list[str]:
        """The servers last asked for ([] = the local one), connected or not."""
        target = self.controller.target
        return list(target.urls) if target is not None else list(self.options.urls)

    def profile_model(self) -> str | None:
        """The model a profile choice is for: the one open, else the one last asked for."""
        target = self.controller.target
        return (
            self.state.model or self.window.server_panel.current_model() or (target.model if target else None)
        )

    def start(self) -> None:
        """The servers remembered and the transport (remembered, or the command line's) shown."""
        url_text = ", ".join(self.options.urls) if self.options.urls else LOCAL_SERVER
        self.window.server_panel.set_recent(self.settings.recent_servers(), url_text)
        kind, batch = self.settings.transport()
        kind = self.options.transport or kind
        batch = self.options.client_batch or batch
        self.window.server_panel.set_transport(kind, batch)
        self._apply_transport(kind, batch)

    # -- the user's choices ---------------------------------------------------------------------
    def connect_model(self, model: str | None) -> None:
        """The same servers, with `model` (the panel's choice, a profile chosen, a reload)."""
        self.controller.connect_to(self.session_urls(), model)

    def connect_urls(self, urls: list[str]) -> None:
        if urls:
            self.settings.remember_server(", ".join(urls))
        self.controller.connect_to(urls, self.state.model)

    def _apply_transport(self, kind: TransportKind, client_batch: int) -> None:
        self.delivery = Delivery(kind, client_batch, self.options.batch_delay_ms)

    def _on_transport_chosen(self, kind: TransportKind, client_batch: int) -> None:
        """The server panel's choice: remembered, and applied by reconnecting."""
        self.settings.set_transport(kind, client_batch)
        self._apply_transport(kind, client_batch)
        if self.controller.session is not None:
            self.connect_model(self.state.model)

    # -- the connection's events ------------------------------------------------------------------
    def _on_session_opened(self, session: TritonSession) -> None:
        info = session.info
        assert info is not None
        panel = self.window.server_panel
        panel.set_stages({})
        panel.set_models(session.models, info.name)
        panel.set_info(info)
        # Which models are a pipeline's stages: one config call per model, off the GUI thread.
        self._executor.submit(self._read_stages, session)
        # What the server lacks of Triton's extensions, said once, with the transport.
        notes = [n for n in (session.transport_note, *session.notes) if n]
        panel.set_transport_in_use(f"{session.describe_transport()}", "<br>".join(notes))

    def _read_stages(self, session: TritonSession) -> None:
        """(Worker thread.) The pipelines' stages, to the panel while `session` is current."""
        try:
            stages = session.pipeline_stages()
        except Exception:  # a closed session, a server gone: the list stays unmarked
            return

        def show() -> None:
            if self.controller.session is session:
                self.window.server_panel.set_stages(stages)

        self._bridge.post(show)

    def _on_local_server_unavailable(self, reason: str) -> None:
        """No local server here (no tritonserver binary on this platform, or an unusable
        $TRITON_VIEWER_PYTHON): use the last remote server remembered, else ask for one."""
        remembered = [u for u in self.settings.recent_servers() if u != LOCAL_SERVER]
        if remembered and not self._asked_for_server:
            self._asked_for_server = True
            self.connect_urls(parse_urls(remembered[0]))
            return
        self._asked_for_server = True
        suggestion = remembered[0] if remembered else "localhost:8001"
        self.server_dialog = ask_for_server(self.window, reason, suggestion, self.connect_urls)

    def _on_state(self, state: ConnectionState, detail: str) -> None:
        w = self.window
        panel = w.server_panel
        panel.set_state(state, detail)
        lead, _raw = split_detail(detail)
        w.statusBar().showMessage(f"{state.value.capitalize()}: {lead}")
        w.empty_state.set_server_text(f"{state.value.capitalize()}: {lead}")
        if state in (ConnectionState.STARTING, ConnectionState.CONNECTING):
            # What was shown belongs to the old connection: never left as if still valid.
            panel.set_info(None)
            panel.set_models([], None)
            self.models_listed = []
            w.banner.clear(Context.CONNECTION)
        elif state is ConnectionState.CONNECTED:
            # Back: what the banner said (the outage, the requests it failed) is over; the
            # failed requests stay in the log.
            self.failure = None
            w.banner.clear(Context.CONNECTION)
            if self._connection_lost:
                # What the stream or batch reported meanwhile was the outage's doing.
                self._connection_lost = False
                w.banner.clear(Context.LIVE)
                w.banner.clear(Context.BATCH)
        elif state in (ConnectionState.FAILED, ConnectionState.DISCONNECTED):
            self._connection_lost = True
            if state is ConnectionState.FAILED:
                panel.set_info(None)
                self.failure = detail
            if state is ConnectionState.DISCONNECTED and self._shown_state is state:
                w.banner.update_error(detail, Context.CONNECTION)  # the outage as it stands now
            else:
                w.banner.show_error(detail, Context.CONNECTION)
        self._shown_state = state
        self.changed.emit()

    def _on_protocol_offered(self, url: str, message: str) -> None:
        """A connect reached a port of the other protocol: offer to connect over that one."""
        target = self.controller.target
        model = target.model if target is not None else None

        def accept() -> None:  # the same server and model, over the other protocol
            self.window.server_panel.set_recent(self.settings.recent_servers(), url)
            self.settings.remember_server(url)
            self.controller.connect_to([url], model or self.state.model)

        if self.protocol_offer is not None and shiboken6.isValid(self.protocol_offer):
            self.protocol_offer.close()
        self.protocol_offer = offer_protocol(self.window, url, message, accept)

    def _on_models_listed(self, names: list[str], states: dict[str, str]) -> None:
        """A connect failed but the server answered: offer its models to choose from, with
        the states it gave (a ready model is not "not loaded")."""
        self.models_listed = list(names)
        entries = [ModelEntry(name, "", states.get(name, ""), "") for name in names]
        target = self.controller.target
        self.window.server_panel.set_models(entries, target.model if target is not None else None)
        self.changed.emit()

    def close_dialogs(self) -> None:
        """A protocol offer, if open (closed by the user: already deleted)."""
        offer, self.protocol_offer = self.protocol_offer, None
        if offer is not None and shiboken6.isValid(offer):
            offer.close()
