"""The server's side of the viewer, built beside the main window's own menus: Model >
Repository…, Tools > Tune…, and the Server view (a dock, View menu). The viewer creates it,
tells it the current session, and listens to `models_changed` (the repository's list, for
its model list) and `model_reloaded` (a model's config may have changed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu

from app.inference.core.session import TritonSession
from app.inference.core.spec import ProfileSource
from app.model_states import ModelEntry
from app.ui.base.bridge import GuiBridge
from app.ui.base.scrolling import scrolling
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.server_tools.metrics_panel import ServerMetricsPanel
from app.ui.server_tools.metrics_source import EmbeddedMetrics, choose_metrics_url
from app.ui.server_tools.repository_window import RepositoryWindow
from app.ui.server_tools.tune_window import TuneWindow

NOT_CONNECTED = "Connect to a server first"
REPOSITORY_TIP = "The server's models: load, unload, reload, their config"
TUNE_TIP = "Try server configs (instances, max batch, dynamic batching) on your images"


class ServerToolsUi(QObject):
    models_changed = Signal(list)  # [ModelEntry]: the server's models after a repository action
    model_reloaded = Signal(str)  # a model was loaded again (repository window or Tune's Apply)

    def __init__(
        self,
        window: QMainWindow,
        menus: tuple[QMenu, QMenu, QMenu],  # Model, Tools, View
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        *,
        metrics_option: str | None,  # the viewer's --metrics-url
        local_server: Callable[[], EmbeddedMetrics | None],  # the embedded server's addresses, while it runs
        settings: ViewerSettings | None = None,  # remembers the metrics address typed per server
        image_paths: Callable[[], list[str]],  # the current batch's images (for the tune)
        profile_for: Callable[[str | None], ProfileSource],  # the viewer's profile of a model
        tabify_with: QDockWidget | None = None,
        view_before: QAction | None = None,  # where the dock's toggle goes in the View menu
    ) -> None:
        super().__init__(window)
        self.window = window
        self._executor, self._tasks, self._bridge = executor, tasks, bridge
        self._metrics_option = metrics_option
        self._local_server = local_server
        self._settings = settings
        self._typed: dict[str, str] = {}  # server URL -> metrics address typed this run
        self._image_paths = image_paths
        self._profile_for = profile_for
        self.session: TritonSession | None = None
        # The repository's list last read (the session's own list is from when it opened).
        self._listed: list[ModelEntry] | None = None
        self.repository: RepositoryWindow | None = None
        self.tune: TuneWindow | None = None
        model_menu, tools_menu, view_menu = menus

        model_menu.addSeparator()
        self.repository_action = QAction("&Repository…", window)
        model_menu.addAction(self.repository_action)
        self.tune_action = QAction("&Tune…", window)
        self.tune_action.setShortcut(QKeySequence("Ctrl+T"))
        tools_menu.addAction(self.tune_action)

        self.metrics_panel = ServerMetricsPanel(executor, tasks)
        self.metrics_dock = QDockWidget("Server", window)
        self.metrics_dock.setObjectName("ServerMetricsDock")  # saveState() needs names
        self.metrics_dock.setWidget(scrolling(self.metrics_panel))
        self.metrics_dock.setToolTip("Triton's Prometheus metrics: pending requests, CPU and memory, GPU")
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.metrics_dock)
        if tabify_with is not None:
            window.tabifyDockWidget(tabify_with, self.metrics_dock)
        self.metrics_dock.hide()  # View > Server shows it
        # Read only while shown: a tab behind another dock is not (visibilityChanged says so).
        self.metrics_dock.visibilityChanged.connect(self.metrics_panel.set_active)
        self.metrics_panel.address_edited.connect(self._on_metrics_address)
        toggle = self.metrics_dock.toggleViewAction()
        toggle.triggered.connect(lambda on: self.metrics_dock.raise_() if on else None)
        view_menu.insertAction(view_before, toggle)  # type: ignore[arg-type]

        self.repository_action.triggered.connect(self.open_repository)
        self.tune_action.triggered.connect(self.open_tune)
        self.set_session(None)

    # -- the viewer's session ------------------------------------------------------------------------
    def set_session(self, session: TritonSession | None) -> None:
        """The viewer's session (None while it has none). Windows already open keep pointing at
        the last server while the viewer reconnects, so an action under way is not cut."""
        self.session = session
        for action in (self.repository_action, self.tune_action):
            action.setEnabled(session is not None)
        self.repository_action.setToolTip(NOT_CONNECTED if session is None else REPOSITORY_TIP)
        self.tune_action.setToolTip(NOT_CONNECTED if session is None else TUNE_TIP)
        if session is None:
            return
        self._listed = None
        if self.repository is not None:
            self.repository.set_server(session.spec.endpoints[0], session.spec.connection)
        self.metrics_panel.set_url(self.metrics_url())
        if self.tune is not None and self.tune.url != session.urls[0]:
            self._prepare_tune(session)  # another server: its models (not while a tune runs)

    def metrics_url(self) -> str | None:
        session = self.session
        if session is None:
            return None
        option = self._metrics_option or session.spec.metrics_url
        server = session.spec.endpoints[0].url
        remembered = self._settings.metrics_address(server) if self._settings is not None else None
        return choose_metrics_url(
            session.spec.endpoints, self._local_server(), option, remembered, self._typed.get(server)
        )

    def _on_metrics_address(self, text: str) -> None:
        """An address typed in the Server view: read from now on, and remembered for this server
        (not for the embedded one: its port is new at every start). "": back to the default."""
        session = self.session
        if session is None:
            return
        server = session.spec.endpoints[0].url
        if text:
            self._typed[server] = text
        else:
            self._typed.pop(server, None)
        local = self._local_server()
        if self._settings is not None and (local is None or local.grpc_url != server):
            self._settings.set_metrics_address(server, text or None)
        self.metrics_panel.set_url(self.metrics_url())

    def _ready_models(self) -> list[str]:
        session = self.session
        models = self._listed if self._listed is not None else (session.models if session is not None else [])
        return sorted({m.name for m in models if m.ready})

    # -- windows ---------------------------------------------------------------------------------
    def open_repository(self) -> None:
        session = self.session
        if session is None:
            return
        if self.repository is None:
            self.repository = RepositoryWindow(self.window, self._executor, self._tasks)
            # Its list is the newest word on the models (the tune offers the ready ones).
            self.repository.models_changed.connect(self._on_repository_listed)
            self.repository.model_loaded.connect(self.model_reloaded)
        self.repository.set_server(session.spec.endpoints[0], session.spec.connection)
        if session.info is not None and self.repository.selected() is None:
            self._select_when_listed(session.info.name)
        self.repository.show()
        self.repository.raise_()

    def _on_repository_listed(self, entries: list[ModelEntry]) -> None:
        if (
            self.repository is not None
            and self.session is not None
            and self.repository.url == self.session.urls[0]
        ):
            self._listed = list(entries)
        self.models_changed.emit(list(entries))

    def _select_when_listed(self, name: str) -> None:
        window = self.repository
        assert window is not None

        def select(_entries: list[ModelEntry]) -> None:
            window.models_changed.disconnect(select)
            if window.selected() is None:
                window.select(name)

        window.models_changed.connect(select)

    def open_tune(self) -> None:
        session = self.session
        if session is None:
            return
        if self.tune is None:
            self.tune = TuneWindow(self.window, self._bridge, self._executor, self._tasks)
            self.tune.applied.connect(self._on_applied)
        self._prepare_tune(session)
        self.tune.show()
        self.tune.raise_()

    def _prepare_tune(self, session: TritonSession) -> None:
        assert self.tune is not None
        model = session.info.name if session.info is not None else None
        paths, metrics = self._image_paths(), self.metrics_url()
        self.tune.prepare(session.spec, self._ready_models(), model, paths, metrics, self._profile_for)

    def _on_applied(self, model: str) -> None:
        self.model_reloaded.emit(model)
        if self.repository is not None:
            self._tasks.spawn(self.repository.refresh(), name="repository: refresh")

    # -- closing ---------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Before the viewer closes its session and server: a tune stops and restores the
        original config (bounded wait), the pollers and clients end."""
        self.metrics_dock.hide()
        steps = [self.metrics_panel.shutdown()]
        if self.tune is not None:
            steps.append(self.tune.shutdown())
        if self.repository is not None:
            steps.append(self.repository.shutdown())
        await asyncio.gather(*steps, return_exceptions=True)
