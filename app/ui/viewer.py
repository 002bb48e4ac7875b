"""Viewer: wires the window's widgets to the viewer's state, the connection, the batch runner,
the gallery and the live stream; routes results (from the bridge, on the GUI thread) to the
log, the strip, the view and the statistics; runs the clean shutdown. The truth it shows lives
in `ViewerState` (app/ui/state); the profile choice, the server statistics and the
--screenshot mode are modules of their own."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QDialog, QInputDialog, QMessageBox

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.introspection.server_info import server_version
from app.inference.model_files.reading import is_model_file_name
from app.inference.profile_kinds import KeypointStyle
from app.inference.protocol import parse_endpoints
from app.inference.result import ErrorKind, InferenceResult, Status, naming_input
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from app.model_states import ModelEntry
from app.pipeline.batch import BatchCounts
from app.pipeline.connection.manager import DEFAULT_MODEL
from app.pipeline.connection.state import ConnectionState
from app.pipeline.exports import ModelVocabulary
from app.pipeline.live import LiveState
from app.resources import sample_image
from app.ui.action_states import ActionStates
from app.ui.analyse_menu import AnalysisUi
from app.ui.analysis.csv_export import write_stats_csv, write_table_csv
from app.ui.analysis.load_test import LoadTestWindow
from app.ui.analysis.request_log import COLUMNS as LOG_COLUMNS
from app.ui.analysis.server_split import ServerSplitPoller
from app.ui.analysis.stats_controller import StatsController
from app.ui.base.bridge import GuiBridge
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import fit_window
from app.ui.batch.batch_browser import BatchBrowser
from app.ui.batch.batch_runner import PLACEHOLDER, BatchRunner
from app.ui.batch.export_actions import Exporter
from app.ui.batch.gallery import Gallery
from app.ui.evaluation.evaluation_ui import EvaluationUi
from app.ui.help import about_dialog, add_help_menu, shortcuts_dialog
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.main_window import MainWindow
from app.ui.model_file_opener import ModelFileOpener, model_files_among
from app.ui.profile_choice import ProfileChoice
from app.ui.screenshot import Screenshot
from app.ui.server.connection import ConnectionController
from app.ui.server.protocol_offer import offer_protocol
from app.ui.server.server_dialog import ask_for_server
from app.ui.server.server_panel import LOCAL_SERVER, parse_urls
from app.ui.server_tools.metrics_source import EmbeddedMetrics
from app.ui.server_tools.server_tools_ui import ServerToolsUi
from app.ui.state.viewer_state import RETIRED, Mode, Scope, ViewerState
from app.ui.widgets.banner import Context, split_detail
from app.ui.widgets.thresholds import why_not_applicable

log = logging.getLogger(__name__)

# Results reach the log in batches (one insert, and one repaint of the log, per flush): at
# 60 results/s a 50 ms flush repainted the table 20 times a second on the GUI thread.
LOG_FLUSH_MS = 200
CLOSE_DRAIN_S = 0.2


@dataclass
class ViewerOptions:
    urls: list[str] = field(default_factory=list)
    model: str | None = None
    open_paths: list[str] = field(default_factory=list)
    camera: str | None = None
    screenshot: str | None = None
    tritonserver: str | None = None
    # TLS and headers for the servers given by URL (the local server is plain gRPC).
    connection: ConnectionOptions | None = None
    # How requests travel; None: as remembered in the settings (the server panel's choice).
    transport: str | None = None
    client_batch: int | None = None
    batch_delay_ms: float = 2.0
    # --profile / --labels, already read: for the model opened first (or --model).
    profile_overrides: dict[str, Any] | None = None
    # The Prometheus metrics of a server given by URL (default: its host, port 8002).
    metrics_url: str | None = None


class Viewer(QObject):
    def __init__(self, options: ViewerOptions, executor: Executor, settings: ViewerSettings | None = None):
        super().__init__()
        self.options = options
        self.executor = executor
        self.settings = settings or ViewerSettings()
        self.exit_code = 0
        self.closed = asyncio.Event()
        self.tasks = TaskSet(on_error=lambda m: self.report(m, True))
        self.state = ViewerState()
        self.window = w = MainWindow()
        # Created here, on the GUI thread: what worker threads post runs on this thread.
        self.bridge = GuiBridge()
        self.connection = ConnectionController(executor, self.bridge, options.tritonserver)
        # A model file dropped or opened (Model > Open model file…): loaded on the server.
        self.model_files = ModelFileOpener(
            self.connection, executor, self.tasks, lambda m, e: self.report(m, e, Context.CONNECTION)
        )
        self._delivery = Delivery()  # how requests travel: the server panel's choice
        self.runner = BatchRunner(self.bridge)
        self.gallery = Gallery(self.state, w.view, w.strip, w.thresholds, executor, self.tasks)
        self.browser = BatchBrowser(self.gallery, w.batch_bar, w.thresholds)
        self.exporter = Exporter(
            w,
            self.gallery,
            executor,
            self.tasks,
            lambda m, e: self.report(m, e, Context.OTHER),
            self.settings,
            self.browser.name_of,
            self._vocabulary,
        )
        self.live = LiveController(
            w.view,
            w.thresholds,
            w.stats_panel,
            executor,
            self.tasks,
            self.bridge,
            lambda m, e: self.report(m, e, Context.LIVE),
            on_take_view=self._live_takes_view,
        )
        self.live_ui = LiveUi(w, w.file_menu, w.view, self.live, executor, self.tasks)
        self.stats = StatsController(
            self.state,
            w.stats_panel,
            w.live_plot,
            self._in_flight,
            self.live.update_stats_panel,
            line=w.stats_line.setText,
        )
        self.server_split = ServerSplitPoller(
            w.time_split, lambda: self.connection.session, executor, self.tasks
        )
        self.analysis = AnalysisUi(w, w.view, self.live, executor, self.tasks, self.bridge, self.report)
        self.server_tools = ServerToolsUi(
            w,
            (w.model_menu, w.tools_menu, w.view_menu),
            executor,
            self.tasks,
            self.bridge,
            metrics_option=options.metrics_url,
            local_server=self._local_server,
            settings=self.settings,
            image_paths=self._ok_paths,
            profile_for=lambda model: self.profiles.profile_for(model),  # made below
            tabify_with=w.time_dock,
            view_before=w.view_menu_toolbar_anchor,
        )
        self.evaluation = EvaluationUi(
            w,
            w.detections_dock,
            self.state,
            w.view,
            w.thresholds,
            self.analysis.compare,
            executor,
            self.tasks,
            self.bridge,
            self.report,
        )
        w.view_menu.insertAction(w.view_menu_toolbar_anchor, self.evaluation.dock.toggleViewAction())
        w.add_side_dock(self.analysis.tracks_dock)
        self.analysis.tracks_dock.hide()  # until tracking is on
        self.actions = ActionStates(self.state, w, self.browser)
        # --profile/--labels apply to --model, else to the model opened first; once the user
        # chooses a profile for that model (Model menu) the choice wins.
        self.profiles = ProfileChoice(
            w,
            self.settings,
            executor,
            self.tasks,
            self.report,
            self._profile_model,
            lambda model: self.connection.connect_to(self._session_urls(), model),
            options.profile_overrides,
            options.model,
        )
        self.screenshot = Screenshot(
            w,
            self.connection,
            self.runner,
            self.gallery,
            self.live,
            bool(options.camera),
            lambda: bool(self._pending_paths),
            lambda: (self._failure, self._models_listed),
        )
        self.shortcuts_action, self.about_action = add_help_menu(w)
        self.dialog: QDialog | None = None  # the Help dialog open, if any
        self._evaluation_job = RETIRED  # the state's job id of the evaluation's run (each run: one less)
        self._pending_paths: list[list[str]] = []  # opened before a session existed, by open
        self._rerun_list = False  # the list waits to run again with a new model (live had the view)
        self.load_test: LoadTestWindow | None = None
        self._batch_key: str | None = None  # the batch image shown before live video took the view
        self._log_buffer: list[InferenceResult] = []
        self._shutting_down = False
        self._asked_for_server = False
        self._failure: str | None = None  # the last connection failure (for --screenshot)
        self._connection_lost = False  # failed or disconnected since the last connect
        self._models_listed: list[str] = []
        self.server_dialog: QInputDialog | None = None
        self.protocol_offer: QMessageBox | None = None  # "that is Triton's HTTP port: connect over HTTP?"
        self._wire()

    def _wire(self) -> None:
        w = self.window
        c = self.connection
        c.state_changed.connect(self._on_state)
        c.session_opened.connect(self._on_session_opened)
        c.session_closing.connect(self._on_session_closing)
        c.local_server_unavailable.connect(self._on_local_server_unavailable)
        c.models_listed.connect(self._on_models_listed)
        c.protocol_offered.connect(self._on_protocol_offered)
        c.profile_ignored.connect(
            lambda model, path, why: self.settings.warn_ignored(
                f"profiles/{model}", path, f"cannot be used: {why}"
            )
        )
        c.spec_for = self.session_spec
        c.session_in_use = lambda: self.runner.active() or self.evaluation.controller.active()
        self.analysis.profile_for = self.profiles.profile_for
        self.settings.on_warning = lambda message: self.report(message, True)
        w.profile_action.triggered.connect(self.profiles.choose)
        w.detected_profile_action.triggered.connect(lambda: self.profiles.set_profile(None))
        self.state.mode_changed.connect(self._show_mode)
        w.server_panel.connect_requested.connect(self._on_connect_requested)
        w.server_panel.model_chosen.connect(lambda name: c.connect_to(self._session_urls(), name))
        w.server_panel.transport_chosen.connect(self._on_transport_chosen)
        w.load_test_action.triggered.connect(self.open_load_test)
        self.server_tools.models_changed.connect(
            lambda entries: w.server_panel.set_models(entries, self.state.model)
        )
        self.server_tools.model_reloaded.connect(self._on_model_reloaded)
        w.paths_opened.connect(self.open_paths)
        w.open_model_file_action.triggered.connect(lambda: self.model_files.choose(w, w.open_dir))
        w.paths_added.connect(lambda paths: self.open_paths(paths, add=True))
        w.sample_requested.connect(self.try_sample)
        w.empty_state.open_camera.connect(self.live_ui.open_camera)
        w.close_requested.connect(self.request_close)
        w.layout_reset.connect(self.analysis.restore_docks)
        w.batch_panel.cancel_requested.connect(lambda: self.runner.cancel())
        self._wire_evaluation()
        w.thresholds.changed.connect(self._save_thresholds)
        w.thresholds.opacity_changed.connect(self.settings.set_mask_opacity)
        self.runner.started.connect(self._on_batch_started)
        self.runner.progress.connect(self._on_batch_progress)
        self.runner.finished.connect(self._on_batch_finished)
        self.runner.entry_added.connect(self._on_entry_added)
        self.runner.result.connect(self._on_batch_result)
        self.live.result.connect(self._on_live_result)
        self.live.state_changed.connect(self._on_live_state)
        self.gallery.load_failed.connect(lambda m: self.report(m, True, Context.BATCH))
        self.browser.navigated.connect(lambda: self._batch_takes_view(reselect=False))
        # At once, not on the next pass: a key held down must find Next/Previous up to date.
        self.browser.moved.connect(lambda: self.actions.apply())
        w.strip.selected.connect(lambda _key: self._batch_takes_view(reselect=False))
        w.next_action.triggered.connect(lambda: self.browser.step(1))
        w.prev_action.triggered.connect(lambda: self.browser.step(-1))
        w.first_action.triggered.connect(self.browser.first)
        w.last_action.triggered.connect(self.browser.last)
        w.export_png_action.triggered.connect(lambda: self.exporter.export_png())
        w.export_jsonl_action.triggered.connect(lambda: self.exporter.export_jsonl(False))
        for fmt, action in w.export_all_actions.items():
            action.triggered.connect(lambda _checked=False, f=fmt: self.exporter.export_all(f))
        w.export_stats_action.triggered.connect(lambda: self.export_stats_csv())
        w.export_log_action.triggered.connect(lambda: self.export_log_csv())
        w.clear_action.triggered.connect(self._clear)
        self.shortcuts_action.triggered.connect(self.show_shortcuts)
        self.about_action.triggered.connect(lambda: self.tasks.spawn(self.show_about(), name="about"))
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(LOG_FLUSH_MS)
        self._flush_timer.timeout.connect(self._flush_log)

    def _wire_evaluation(self) -> None:
        """Analyse > Evaluate against labels…: the dataset's images become the batch, their
        results go where a batch's go (log, statistics, thumbnails, picture)."""
        w, ev = self.window, self.evaluation.controller
        self.analysis.evaluate_action.triggered.connect(lambda: self.evaluation.ask())
        w.batch_panel.cancel_requested.connect(ev.cancel)
        ev.starting.connect(self._on_evaluation_starting)
        # The evaluation's run feeds the list as a job of its own (the state's job id of it).
        ev.entry_added.connect(
            lambda key, thumb, ident: self._on_entry_added(self._evaluation_job, key, thumb, ident)
        )
        ev.result.connect(lambda result: self._on_batch_result(self._evaluation_job, result))
        ev.run_started.connect(w.batch_panel.start)
        ev.run_progress.connect(w.batch_panel.set_progress)
        ev.run_finished.connect(
            lambda _job, counts, seconds: self._on_batch_finished(self._evaluation_job, counts, seconds)
        )

    def _on_evaluation_starting(self, roots: list[str]) -> None:
        self._clear()
        # A new id for each run, below the batch runner's and RETIRED: a late result of an
        # earlier run no longer feeds the list.
        self._evaluation_job -= 1
        self.state.add_job(self._evaluation_job, roots)
        self._batch_takes_view()
        self.gallery.expect_new_job()
        self.stats.batch_started()

    # -- start -----------------------------------------------------------------------
    def start(self) -> None:
        """Shows the window (with its remembered size and layout) and starts connecting."""
        geometry, state = self.settings.window_state()
        if geometry is None or not self.window.restoreGeometry(geometry):
            self.window.fit_to_screen()
        else:
            fit_window(self.window)  # saved on a larger screen: still fits this one
        if state is None or not self.window.restore_layout(state):
            self.window.default_dock_sizes()
        # Shown once its geometry is set: the window manager places the window once, and the
        # frame it adds is fitted to the screen as soon as it is known (keep_on_screen).
        self.window.show()
        self.window.open_dir = self.settings.last_dir("open")
        self.evaluation.start_dir = self.settings.last_dir("evaluate")
        self.live_ui.record_dir = self.settings.last_dir("record")
        self.live_ui.opened_dir = lambda: self.window.open_dir
        self.live_ui.remember_record_dir = lambda folder: self.settings.set_last_dir("record", folder)
        url_text = ", ".join(self.options.urls) if self.options.urls else LOCAL_SERVER
        self.window.server_panel.set_recent(self.settings.recent_servers(), url_text)
        opacity = self.settings.mask_opacity()
        if opacity is not None:
            self.window.thresholds.set_mask_opacity(opacity)
        kind, batch = self.settings.transport()
        kind = TransportKind(self.options.transport) if self.options.transport else kind
        batch = self.options.client_batch or batch
        self.window.server_panel.set_transport(kind, batch)
        self._apply_transport(kind, batch)
        self.server_split.start()
        self.stats.start()
        self._show_mode(self.state.mode)
        if self.options.camera:
            self.live.open_text(self.options.camera)  # starts once connected
        if self.options.open_paths:
            self.open_paths(self.options.open_paths)
        remembered = None if self.options.model else self.settings.model()
        model = self.options.model or remembered
        if model is not None and is_model_file_name(model):  # `--model FILE.onnx`: once connected
            self.model_files.open_when_connected(model)
            model = None
        self.connection.connect_to(self.options.urls, model, model_is_hint=remembered is not None)
        if self.options.screenshot:
            self.tasks.spawn(self._take_screenshot(self.options.screenshot), name="screenshot")

    def open_paths(self, paths: list[str], add: bool = False) -> None:
        """Files and folders (dropped, opened, or the sample): a new list, or with `add` (File >
        Add to the list, Shift on drop) more of the list shown. An empty path is refused with a
        word (it would mean the current folder); the others still open. A model file among
        them (.onnx, .tflite) is loaded on the server instead (app.ui.model_file_opener)."""
        files, paths = model_files_among([str(p) for p in paths])
        if files:
            self.model_files.open(files[0])
            if not paths:
                return
        kept = [p for p in paths if str(p).strip()]
        if kept:
            self._open_list(kept, add)
        if len(kept) < len(paths):
            refused = len(paths) - len(kept)
            self.window.banner.show_error(
                f"{refused} empty path(s) not opened: name a file or folder", Context.BATCH
            )

    def _open_list(self, paths: list[str], add: bool) -> None:
        if not add:
            self._new_list()
        first = Path(paths[0])
        self.window.open_dir = str(first if first.is_dir() else first.parent)
        self.settings.set_last_dir("open", self.window.open_dir)
        self._batch_takes_view()
        self.window.banner.clear(Context.BATCH)  # a new batch: the last one's errors are history
        if self.connection.session is None:
            self._pending_paths.append([str(p) for p in paths])
            self.window.statusBar().showMessage(self._show_pending())
            return
        self._run_batch([str(p) for p in paths])

    def _run_batch(self, paths: list[str]) -> None:
        self.window.view_note.hide()
        self.gallery.expect_new_job()
        self.stats.batch_started()
        self.state.add_job(self.runner.start(paths), paths)

    def _new_list(self) -> None:
        """The list starts afresh: what runs for the old one is cancelled (its late results go
        to the log and the session's statistics only), its pictures, boxes and names go."""
        self.runner.cancel()
        self._pending_paths.clear()
        self._show_pending()
        self._rerun_list = False
        self.gallery.clear()
        self.browser.clear()
        if not self.live.active:  # (a stream that plays on keeps its tracks)
            self.analysis.tracking.reset()  # nothing of an earlier stream stays drawn either

    def try_sample(self) -> None:
        self.open_paths([str(sample_image())])

    def _show_pending(self) -> str:
        """Inputs opened before a model is open: the batch's bar and the picture say what they
        wait for (not "0 / 0", not a dark empty picture). Returns what they say."""
        paths = [path for group in self._pending_paths for path in group]
        if not paths:
            self.window.view_note.hide()
            return ""
        if len(paths) > 1:
            what, verb = f"{len(paths)} inputs", "wait"
        else:
            what, verb = "The sample" if paths[0] == str(sample_image()) else Path(paths[0]).name, "waits"
        state = self.connection.state
        if state is ConnectionState.FAILED and self._models_listed:
            text = f"{what} {verb} for a model: choose one under Server and model"
        elif state is ConnectionState.FAILED:
            text = f"{what} {verb} for a server: connect under Server and model"
        elif state is ConnectionState.STARTING:
            text = f"{what} will run once the local server has started"
        else:
            text = f"{what} will run once connected to the server"
        self.window.batch_panel.wait(text)
        if self.state.mode is Mode.BATCH:
            self.window.view_note.show_text(text)
        return text

    # -- modes: what the middle of the window shows (the state's; the window follows) ----------
    def _show_mode(self, mode: Mode) -> None:
        self.window.set_mode(mode)
        # The live toolbar has no use while browsing a batch unless a stream is open.
        self.live_ui.toolbar.setVisible(mode is not Mode.BATCH or self.live.has_source)

    def _batch_takes_view(self, reselect: bool = True) -> None:
        """The batch shows again (opened, or the user moves in it): a playing stream stops."""
        if self.state.mode is Mode.BATCH:
            return
        if self.live.active:
            self.live.stop()  # one picture at a time: the stream stops, its last frame goes
            self.window.statusBar().showMessage("Live stream stopped: showing the batch", 5000)
        self.live.release_view()
        self.analysis.tracking.reset()  # the stream's trails go with its pictures
        self.window.banner.clear(Context.LIVE)
        self.state.set_mode(Mode.BATCH)
        if self._rerun_list:  # the model changed while the stream had the view
            self._run_list_again()
        key, self._batch_key = self._batch_key, None
        if reselect and key is not None and self.state.current_key is None:
            self.gallery.select(key)  # draw the batch's image again

    def _live_takes_view(self) -> None:
        self.window.statusBar().clearMessage()  # e.g. the batch's summary: not about the video
        self._batch_key = self.state.current_key or self._batch_key
        self.state.select(None)  # the batch stops redrawing the view
        self.window.banner.clear(Context.BATCH)
        self.state.set_mode(Mode.LIVE)

    # -- connection events ---------------------------------------------------------------
    def _on_connect_requested(self, urls: list[str]) -> None:
        if urls:
            self.settings.remember_server(", ".join(urls))
        self.connection.connect_to(urls, self.state.model)

    def _on_local_server_unavailable(self, reason: str) -> None:
        """No local server here (no tritonserver binary on this platform, or an unusable
        $TRITON_VIEWER_PYTHON): use the last remote server remembered, else ask for one."""
        remembered = [u for u in self.settings.recent_servers() if u != LOCAL_SERVER]
        if remembered and not self._asked_for_server:
            self._asked_for_server = True
            self._on_connect_requested(parse_urls(remembered[0]))
            return
        self._asked_for_server = True
        suggestion = remembered[0] if remembered else "localhost:8001"
        self.server_dialog = ask_for_server(self.window, reason, suggestion, self._on_connect_requested)

    def _session_urls(self) -> list[str]:
        """The servers last asked for ([] = the local one), connected or not."""
        target = self.connection.target
        return list(target.urls) if target is not None else list(self.options.urls)

    def _on_state(self, state: ConnectionState, detail: str) -> None:
        panel = self.window.server_panel
        panel.set_state(state, detail)
        lead, _raw = split_detail(detail)
        self.window.statusBar().showMessage(f"{state.value.capitalize()}: {lead}")
        self.window.empty_state.set_server_text(f"{state.value.capitalize()}: {lead}")
        if state in (ConnectionState.STARTING, ConnectionState.CONNECTING):
            # What was shown belongs to the old connection: never left as if still valid.
            panel.set_info(None)
            panel.set_models([], None)
            self._models_listed = []
            self.window.banner.clear(Context.CONNECTION)
        elif state is ConnectionState.CONNECTED:
            # Back: what the banner said (the outage, the requests it failed) is over; the
            # failed requests stay in the log.
            self._failure = None
            self.window.banner.clear(Context.CONNECTION)
            self.model_files.on_connected()
            if self._connection_lost:
                # What the stream or batch reported meanwhile was the outage's doing.
                self._connection_lost = False
                self.window.banner.clear(Context.LIVE)
                self.window.banner.clear(Context.BATCH)
        elif state in (ConnectionState.FAILED, ConnectionState.DISCONNECTED):
            self._connection_lost = True
            if state is ConnectionState.FAILED:
                panel.set_info(None)
                self._failure = detail
            self.window.banner.show_error(detail, Context.CONNECTION)
        self._show_pending()

    def _on_protocol_offered(self, url: str, message: str) -> None:
        """A connect reached a port of the other protocol: offer to connect over that one."""

        target = self.connection.target
        model = target.model if target is not None else None

        def accept() -> None:  # the same server and model, over the other protocol
            self.window.server_panel.set_recent(self.settings.recent_servers(), url)
            self.settings.remember_server(url)
            self.connection.connect_to([url], model or self.state.model)

        if self.protocol_offer is not None and shiboken6.isValid(self.protocol_offer):
            self.protocol_offer.close()
        self.protocol_offer = offer_protocol(self.window, url, message, accept)

    def _on_models_listed(self, names: list[str], states: dict[str, str]) -> None:
        """A connect failed but the server answered: offer its models to choose from, with
        the states it gave (a ready model is not "not loaded")."""
        self._models_listed = list(names)
        entries = [ModelEntry(name, "", states.get(name, ""), "") for name in names]
        target = self.connection.target
        self.window.server_panel.set_models(entries, target.model if target is not None else None)
        self._show_pending()

    # -- what a session is opened with ---------------------------------------------------------------
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
            profile=self.profiles.profile_for(model),
            delivery=self._delivery,
            connection=self.options.connection or ConnectionOptions(),
        )

    def _profile_model(self) -> str | None:
        """The model a profile choice is for: the one open, else the one last asked for."""
        target = self.connection.target
        return (
            self.state.model or self.window.server_panel.current_model() or (target.model if target else None)
        )

    def _apply_transport(self, kind: TransportKind, client_batch: int) -> None:
        self._delivery = Delivery(kind, client_batch, self.options.batch_delay_ms)

    def _on_transport_chosen(self, kind: TransportKind, client_batch: int) -> None:
        """The server panel's choice: remembered, and applied by reconnecting."""
        self.settings.set_transport(kind, client_batch)
        self._apply_transport(kind, client_batch)
        if self.connection.session is not None:
            self.connection.connect_to(self._session_urls(), self.state.model)

    def open_load_test(self) -> None:
        """Tools > Load test…: the sweep on the current images (or the sample), in its own window."""
        session = self.connection.session
        if session is None:
            self.report("Load test: connect to a server first", True)
            return
        if self.load_test is None:
            self.load_test = LoadTestWindow(self.window, self.bridge, self.executor)
        model = session.info.name if session.info else session.spec.model
        self.load_test.prepare(dataclasses.replace(session.spec, model=model), self._ok_paths())
        self.load_test.show()
        self.load_test.raise_()

    def _ok_paths(self) -> list[str]:
        """The current batch's images that ran (what the load test and the tune send)."""
        return [key for key in self.gallery.results if self.gallery.results[key].ok]

    def _local_server(self) -> EmbeddedMetrics | None:
        """The embedded server's gRPC address and metrics URL, while it runs."""
        server = self.connection.server
        if server is None or not server.running:
            return None
        return EmbeddedMetrics(server.grpc_url, server.metrics_url)

    def _on_model_reloaded(self, name: str) -> None:
        """Loaded again (Model > Repository, Tune's Apply): the model shown is read again."""
        if name == self.state.model and self.connection.session is not None and not self.runner.active():
            self.connection.connect_to(self._session_urls(), name)

    def _on_session_opened(self, session: TritonSession) -> None:
        info = session.info
        assert info is not None
        switched = self.state.model is not None and self.state.model != info.name
        self.state.model = info.name
        self.profiles.model_opened(info.name)
        self.runner.set_session(session)
        panel = self.window.server_panel
        panel.set_models(session.models, info.name)
        panel.set_info(info)
        # What the server lacks of Triton's extensions, said once, with the transport.
        notes = [n for n in (session.transport_note, *session.notes) if n]
        panel.set_transport_in_use(f"{session.describe_transport()}", "<br>".join(notes))
        self.server_split.session_opened(session)
        self.window.view.set_keypoint_style(
            info.profile.skeleton,
            info.profile.keypoint_names,
            info.profile.keypoint_style is KeypointStyle.DOTS,
        )
        self.settings.set_model(info.name)
        remembered = self.settings.thresholds(info.name)
        score, iou = remembered or (info.profile.score_threshold, info.profile.iou_threshold)
        self.window.thresholds.set_values(score, iou)
        self.window.thresholds.set_applicable(*why_not_applicable(info.name, info.profile.task))
        if switched:
            self._model_switched()
        pending, self._pending_paths = self._pending_paths, []
        for paths in pending:
            self._run_batch(paths)
        self.live.set_session(session)
        self.analysis.set_session(session)
        self.server_tools.set_session(session)
        self.evaluation.set_session(session)

    def _model_switched(self) -> None:
        """Another model: nothing of the old one stays drawn (boxes, masks, classes, trails);
        the list shown runs again with the new model."""
        self.analysis.tracking.reset()
        self.live.forget_results()
        self.gallery.forget_results()
        self.state.retire_jobs()  # the old model's jobs (cancelled) no longer feed the list
        # While live video plays the list waits (its statistics scope too) for the batch view.
        self._rerun_list = self.state.has_entries()
        if self.state.mode is Mode.BATCH:
            self._run_list_again()

    def _run_list_again(self) -> None:
        """The list shown, run with the model now in use (after a model switch)."""
        roots, self._rerun_list = self.state.roots(), False
        if roots and self.state.has_entries() and self.connection.session is not None:
            self._run_batch(roots)

    def _on_session_closing(self, _session: TritonSession) -> None:
        self.runner.cancel()  # stop feeding the old session; its requests end as cancelled
        self.runner.set_session(None)
        self.live.set_session(None)  # the stream stops feeding the old session
        self.analysis.set_session(None)
        self.server_tools.set_session(None)
        self.evaluation.set_session(None)
        self.evaluation.controller.cancel()  # the images answered so far are evaluated

    def _in_flight(self) -> int:
        session = self.connection.session
        return session.in_flight if session is not None else 0

    def _vocabulary(self) -> ModelVocabulary:
        """The model's class and keypoint names and skeleton, for the exports."""
        session = self.connection.session
        if session is None or session.info is None:
            return ModelVocabulary()
        return ModelVocabulary.from_profile(session.info.profile)

    # -- results (GUI thread, through the bridge) ---------------------------------------------
    def _log(self, result: InferenceResult) -> None:
        self._log_buffer.append(result)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def _on_entry_added(self, job: int, key: str, thumbnail: object, identity: object) -> None:
        if self.state.feeds(job):  # else a list cleared or replaced since
            self.gallery.add_entry(key, thumbnail, identity, job)  # type: ignore[arg-type]

    def _on_batch_result(self, job: int, result: InferenceResult) -> None:
        """A batch input's result, sent or local (unreadable, not media): log, strip, view.
        A job of a list cleared or replaced since: the log and the session's statistics only."""
        self._log(result)
        if not self.state.feeds(job):
            self.stats.add(result, Scope.SESSION)
            return
        self.stats.add(result, Scope.BATCH)
        key = result.source
        # Not media (skipped): in the log, the counts and the exports, not in the strip.
        unread = result.request_id is None and result.status is not Status.SKIPPED
        if unread and key is not None and not self.gallery.has_entry(key):
            self.gallery.add_entry(key, PLACEHOLDER, None, job)
        self.gallery.on_result(result)
        self.browser.on_result(result)
        if result.status in (Status.FAILED, Status.TIMEOUT):
            message = naming_input(result.source, result.error or result.status.value, result.frame)
            self.report(message, True, Context.BATCH)
            if result.error_kind is ErrorKind.UNREACHABLE:
                self.connection.report_unreachable(result.error or "")

    def _on_live_result(self, result: InferenceResult) -> None:
        self._log(result)
        self.stats.add(result, Scope.LIVE)

    def _on_live_state(self, state: LiveState, _detail: str) -> None:
        if state is LiveState.PLAYING and self.live.meter.results == 0:
            self.window.banner.clear(Context.LIVE)  # a new stream: earlier stream errors are history
            self.stats.live_started()
        self.state.set_live(state)

    def _flush_log(self) -> None:
        batch, self._log_buffer = self._log_buffer, []
        self.window.request_log.add_results(batch)

    # Only the jobs of the list shown move its progress (not one cancelled by a new list).
    def _on_batch_started(self, job: int, total: int) -> None:
        if self.state.feeds(job):
            self.window.batch_panel.start(total)

    def _on_batch_progress(self, job: int, counts: BatchCounts) -> None:
        if self.state.feeds(job):
            self.window.batch_panel.set_progress(counts.done)

    def _on_batch_finished(self, job: int, counts: BatchCounts, seconds: float) -> None:
        if not self.state.feeds(job):
            return  # a list cleared or replaced since: its summary is not this list's
        self.window.batch_panel.finish(counts, seconds)
        self.stats.batch_finished(counts)
        self.window.statusBar().showMessage(self.window.batch_panel.summary.text())

    def report(self, message: str, error: bool, context: Context = Context.OTHER) -> None:
        """Errors go where the user looks: the banner (owned by `context`) and the status bar."""
        if self._shutting_down:
            return
        if error:
            self.window.banner.show_error(message, context)
        lead, _raw = split_detail(message)
        self.window.statusBar().showMessage(lead, 0 if error else 5000)

    def _save_thresholds(self, score: float, iou: float) -> None:
        if self.state.model:
            self.settings.set_thresholds(self.state.model, score, iou)

    def _clear(self) -> None:
        """File > Clear the image list: what runs for it stops, nothing of it stays drawn."""
        self._new_list()
        self.window.request_log.clear()
        self.window.banner.clear(Context.BATCH)
        self.state.set_mode(Mode.LIVE if self.live.active else Mode.EMPTY)

    # -- statistics and log as CSV --------------------------------------------------------------
    def export_stats_csv(self, path: str | None = None) -> None:
        snapshots = self.stats.snapshots()
        self.exporter.export_table(
            "Export the statistics (CSV)", "statistics", lambda p: write_stats_csv(p, snapshots), path
        )

    def export_log_csv(self, path: str | None = None) -> None:
        self._flush_log()
        rows = self.window.request_log.visible_rows()
        title = f"Export the {len(rows)} request log rows shown (CSV)"
        self.exporter.export_table(title, "requests", lambda p: write_table_csv(p, LOG_COLUMNS, rows), path)

    # -- help ------------------------------------------------------------------------------------
    def show_shortcuts(self) -> None:
        self.dialog = shortcuts_dialog(self.window)
        self.dialog.open()

    async def show_about(self) -> None:
        session, version = self.connection.session, None
        if session is not None:
            endpoint = session.spec.endpoints[0]
            options = session.spec.connection
            version = await asyncio.get_running_loop().run_in_executor(
                self.executor, server_version, endpoint, options
            )
            version = f"{version} at {endpoint.url}"
        self.dialog = about_dialog(self.window, version)
        self.dialog.open()

    # -- screenshot ---------------------------------------------------------------------------
    async def _take_screenshot(self, path: str) -> None:
        self.exit_code = await self.screenshot.take(path, self._settle_for_screenshot, self.report)
        self.request_close()

    def _settle_for_screenshot(self) -> None:
        """What is shown catches up with the last results before the window is grabbed."""
        self._flush_log()
        self.stats.poll()
        self.window.detections_panel.refresh()

    # -- shutdown -------------------------------------------------------------------------------
    def request_close(self) -> None:
        """From the window's close, File > Quit, SIGINT/SIGTERM or --screenshot. Idempotent."""
        if self._shutting_down:
            return
        self._shutting_down = True
        # The layout as the user left it (floating docks included), before anything is hidden.
        self.settings.set_window_state(self.window.saveGeometry(), self.window.save_layout())
        self.window.hide_all()
        self.tasks.spawn(self._shutdown(), name="shutdown")

    async def _shutdown(self) -> None:
        """Each step on its own: one that fails (logged) never skips the ones after it, so
        the batch is always cancelled and the connection always closed."""
        steps: list[tuple[str, Callable[[], object]]] = [
            ("settings", self._save_settings),
            ("timers", self._stop_timers),
            ("dialogs", self._close_dialogs),
            ("batch", self.runner.cancel),  # stop submitting first: nothing new goes out
            ("bridge", self.bridge.close),  # from now on results are dropped, not delivered
            ("live", self.live.shutdown),  # stop the stream, release the capture on its thread
            ("load test", self._close_load_test),  # a sweep in progress stops, its thread ends
            ("evaluation", self.evaluation.shutdown),  # an evaluation's run stops, its thread ends
            ("analysis", self.analysis.shutdown),  # the compare window's runs and sessions
            ("server tools", self.server_tools.shutdown),  # a tune restores the original config first
            ("connection", lambda: self.connection.shutdown(CLOSE_DRAIN_S)),  # cancel, close, stop
            ("tasks", self.tasks.cancel_all),  # nothing left pending when the loop closes
        ]
        try:
            for name, step in steps:
                try:
                    outcome = step()
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    log.exception("error while closing (%s)", name)
        finally:
            self.window.allow_close()
            self.window.close()
            self.closed.set()

    def _save_settings(self) -> None:
        self.settings.set_last_dir("record", self.live_ui.record_dir)
        if self.evaluation.controller.choice is not None:
            # Where the next dataset is looked for: beside this one.
            self.settings.set_last_dir(
                "evaluate", str(Path(self.evaluation.controller.choice.dataset).parent)
            )
        self.settings.sync()

    def _stop_timers(self) -> None:
        self.stats.stop()
        self.server_split.stop()
        self._flush_timer.stop()

    def _close_dialogs(self) -> None:
        """The Help dialog and a protocol offer, if open (closed by the user: already deleted)."""
        dialog, self.dialog = self.dialog, None
        offer, self.protocol_offer = self.protocol_offer, None
        for widget in (dialog, offer):
            if widget is not None and shiboken6.isValid(widget):
                widget.close()

    async def _close_load_test(self) -> None:
        if self.load_test is not None:
            await self.load_test.shutdown()
