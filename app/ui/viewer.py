"""Viewer: wires the window's widgets to the viewer's state, the connection, the batch runner,
the gallery and the live stream; routes results (from the bridge, on the GUI thread) to the
log, the strip, the view and the statistics; runs the clean shutdown. The truth it shows lives
in `ViewerState` (app/ui/state); the profile choice, the server statistics and the
--screenshot mode are modules of their own."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QDialog, QInputDialog

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.introspection.discovery import ModelEntry
from app.inference.introspection.server_info import server_version
from app.inference.profile_kinds import KeypointStyle
from app.inference.result import ErrorKind, InferenceResult, Status, naming_input
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from app.pipeline.batch import BatchCounts
from app.pipeline.connection.manager import DEFAULT_MODEL
from app.pipeline.connection.state import ConnectionState
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
from app.ui.batch.batch_browser import BatchBrowser
from app.ui.batch.batch_runner import PLACEHOLDER, BatchRunner
from app.ui.batch.export_actions import Exporter
from app.ui.batch.gallery import Gallery
from app.ui.help import about_dialog, add_help_menu, shortcuts_dialog
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.main_window import MainWindow
from app.ui.profile_choice import ProfileChoice
from app.ui.screenshot import Screenshot
from app.ui.server.connection import ConnectionController
from app.ui.server.server_dialog import ask_for_server
from app.ui.server.server_panel import LOCAL_SERVER, parse_urls
from app.ui.state.viewer_state import Mode, Scope, ViewerState
from app.ui.widgets.banner import Context, split_detail

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
            self._labels,
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
            self.state, w.stats_panel, w.live_plot, self._in_flight, self.live.update_stats_panel
        )
        self.server_split = ServerSplitPoller(
            w.time_split, lambda: self.connection.session, executor, self.tasks
        )
        self.analysis = AnalysisUi(w, w.view, self.live, executor, self.tasks, self.bridge, self.report)
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
        self._pending_paths: list[str] = []
        self.load_test: LoadTestWindow | None = None
        self._batch_key: str | None = None  # the batch image shown before live video took the view
        self._log_buffer: list[InferenceResult] = []
        self._shutting_down = False
        self._model: str | None = None
        self._asked_for_server = False
        self._failure: str | None = None  # the last connection failure (for --screenshot)
        self._connection_lost = False  # failed or disconnected since the last connect
        self._models_listed: list[str] = []
        self.server_dialog: QInputDialog | None = None
        self._wire()

    def _wire(self) -> None:
        w = self.window
        c = self.connection
        c.state_changed.connect(self._on_state)
        c.session_opened.connect(self._on_session_opened)
        c.session_closing.connect(self._on_session_closing)
        c.local_server_unavailable.connect(self._on_local_server_unavailable)
        c.models_listed.connect(self._on_models_listed)
        c.profile_ignored.connect(
            lambda model, path, why: self.settings.warn_ignored(
                f"profiles/{model}", path, f"cannot be used: {why}"
            )
        )
        c.spec_for = self.session_spec
        c.session_in_use = self.runner.active
        self.analysis.profile_for = self.profiles.profile_for
        self.settings.on_warning = lambda message: self.report(message, True)
        w.profile_action.triggered.connect(self.profiles.choose)
        w.detected_profile_action.triggered.connect(lambda: self.profiles.set_profile(None))
        self.state.mode_changed.connect(self._show_mode)
        w.server_panel.connect_requested.connect(self._on_connect_requested)
        w.server_panel.model_chosen.connect(lambda name: c.connect_to(self._session_urls(), name))
        w.server_panel.transport_chosen.connect(self._on_transport_chosen)
        w.load_test_action.triggered.connect(self.open_load_test)
        w.paths_opened.connect(self.open_paths)
        w.sample_requested.connect(self.try_sample)
        w.empty_state.open_camera.connect(self.live_ui.open_camera)
        w.close_requested.connect(self.request_close)
        w.batch_panel.cancel_requested.connect(lambda: self.runner.cancel())
        w.thresholds.changed.connect(self._save_thresholds)
        w.thresholds.opacity_changed.connect(self.settings.set_mask_opacity)
        self.runner.started.connect(lambda _job, total: w.batch_panel.start(total))
        self.runner.progress.connect(lambda _job, counts: w.batch_panel.set_progress(counts.done))
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

    # -- start -----------------------------------------------------------------------
    def start(self) -> None:
        geometry, state = self.settings.window_state()
        if geometry is None or not self.window.restoreGeometry(geometry):
            self.window.fit_to_screen()
        if state is None or not self.window.restore_layout(state):
            self.window.default_dock_sizes()
        self.window.open_dir = self.settings.last_dir("open")
        self.live_ui.record_dir = self.settings.last_dir("record")
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
        self.connection.connect_to(self.options.urls, model, model_is_hint=remembered is not None)
        if self.options.screenshot:
            self.tasks.spawn(self._take_screenshot(self.options.screenshot), name="screenshot")

    def open_paths(self, paths: list[str]) -> None:
        """A batch of files and folders (dropped, opened, or the sample)."""
        if not paths:
            return
        self.browser.add_roots([str(p) for p in paths])
        first = Path(paths[0])
        self.window.open_dir = str(first if first.is_dir() else first.parent)
        self.settings.set_last_dir("open", self.window.open_dir)
        self._batch_takes_view()
        self.window.banner.clear(Context.BATCH)  # a new batch: the last one's errors are history
        if self.connection.session is None:
            self._pending_paths.extend(paths)
            self.window.statusBar().showMessage(f"{len(paths)} input(s) will run once connected")
            return
        self.gallery.expect_new_job()
        self.stats.batch_started()
        self.runner.start(paths)

    def try_sample(self) -> None:
        self.open_paths([str(sample_image())])

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
        self.window.banner.clear(Context.LIVE)
        self.state.set_mode(Mode.BATCH)
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
        self.connection.connect_to(urls, self._model)

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
            self.window.banner.clear(Context.CONNECTION)
        elif state is ConnectionState.CONNECTED:
            # Back: what the banner said (the outage, the requests it failed) is over; the
            # failed requests stay in the log.
            self._failure = None
            self.window.banner.clear(Context.CONNECTION)
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

    def _on_models_listed(self, names: list[str]) -> None:
        """A connect failed but the server answered: offer its models to choose from."""
        self._models_listed = list(names)
        entries = [ModelEntry(name, "", "", "") for name in names]
        target = self.connection.target
        self.window.server_panel.set_models(entries, target.model if target is not None else None)

    # -- what a session is opened with ---------------------------------------------------------------
    def session_spec(self, urls: list[str], model: str | None) -> SessionSpec:
        """The one place the viewer turns its options, settings and panel into a SessionSpec:
        `urls` ([] = the embedded server), `model`, its profile, the transport and client
        batching chosen, TLS and headers for remote servers."""
        if not urls:
            model = model or DEFAULT_MODEL  # the embedded server's model: its profile applies
        return SessionSpec(
            urls=tuple(urls),
            model=model,
            profile=self.profiles.profile_for(model),
            delivery=self._delivery,
            connection=self.options.connection or ConnectionOptions(),
        )

    def _profile_model(self) -> str | None:
        """The model a profile choice is for: the one open, else the one last asked for."""
        target = self.connection.target
        return self._model or self.window.server_panel.current_model() or (target.model if target else None)

    def _apply_transport(self, kind: TransportKind, client_batch: int) -> None:
        self._delivery = Delivery(kind, client_batch, self.options.batch_delay_ms)

    def _on_transport_chosen(self, kind: TransportKind, client_batch: int) -> None:
        """The server panel's choice: remembered, and applied by reconnecting."""
        self.settings.set_transport(kind, client_batch)
        self._apply_transport(kind, client_batch)
        if self.connection.session is not None:
            self.connection.connect_to(self._session_urls(), self._model)

    def open_load_test(self) -> None:
        """Tools > Load test…: the sweep on the current images (or the sample), in its own window."""
        session = self.connection.session
        if session is None:
            self.report("Load test: connect to a server first", True)
            return
        if self.load_test is None:
            self.load_test = LoadTestWindow(self.window, self.bridge, self.executor)
        paths = [key for key in self.gallery.results if self.gallery.results[key].ok]
        model = session.info.name if session.info else session.spec.model
        self.load_test.prepare(dataclasses.replace(session.spec, model=model), paths)
        self.load_test.show()
        self.load_test.raise_()

    def _on_session_opened(self, session: TritonSession) -> None:
        info = session.info
        assert info is not None
        self._model = info.name
        self.profiles.model_opened(info.name)
        self.runner.set_session(session)
        panel = self.window.server_panel
        panel.set_models(session.models, info.name)
        panel.set_info(info)
        panel.set_transport_in_use(session.describe_transport(), session.transport_note)
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
        paths, self._pending_paths = self._pending_paths, []
        if paths:
            self.open_paths(paths)
        self.live.set_session(session)
        self.analysis.set_session(session)

    def _on_session_closing(self, _session: TritonSession) -> None:
        self.runner.cancel()  # stop feeding the old session; its requests end as cancelled
        self.runner.set_session(None)
        self.live.set_session(None)  # the stream stops feeding the old session
        self.analysis.set_session(None)

    def _in_flight(self) -> int:
        session = self.connection.session
        return session.in_flight if session is not None else 0

    def _labels(self) -> list[str]:
        session = self.connection.session
        return list(session.info.profile.labels) if session is not None and session.info else []

    # -- results (GUI thread, through the bridge) ---------------------------------------------
    def _log(self, result: InferenceResult) -> None:
        self._log_buffer.append(result)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def _on_entry_added(self, key: str, thumbnail: object, identity: object) -> None:
        self.gallery.add_entry(key, thumbnail, identity)  # type: ignore[arg-type]

    def _on_batch_result(self, result: InferenceResult) -> None:
        """A batch input's result, sent or local (unreadable, not media): log, strip, view."""
        self._log(result)
        self.stats.add(result, Scope.BATCH)
        key = result.source
        # Not media (skipped): in the log, the counts and the exports, not in the strip.
        unread = result.request_id is None and result.status is not Status.SKIPPED
        if unread and key is not None and not self.gallery.has_entry(key):
            self.gallery.add_entry(key, PLACEHOLDER)
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

    def _on_batch_finished(self, _job: int, counts: BatchCounts, seconds: float) -> None:
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
        if self._model:
            self.settings.set_thresholds(self._model, score, iou)

    def _clear(self) -> None:
        self.gallery.clear()
        self.browser.clear()
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
            url = session.urls[0]
            options = session.options
            version = await asyncio.get_running_loop().run_in_executor(
                self.executor, server_version, url, options
            )
            version = f"{version} at {url}"
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
        try:
            self.settings.set_last_dir("record", self.live_ui.record_dir)
            self.settings.sync()
            self.stats.stop()
            self.server_split.stop()
            self._flush_timer.stop()
            if self.dialog is not None:
                with contextlib.suppress(RuntimeError):  # closed by the user: already deleted
                    self.dialog.close()
            self.bridge.close()  # from now on results are dropped, not delivered
            await self.live.shutdown()  # stop the stream, release the capture on its thread
            if self.load_test is not None:
                await self.load_test.shutdown()  # a sweep in progress stops, its thread ends
            await self.analysis.shutdown()  # the compare window's runs and sessions
            self.runner.cancel()  # stop submitting
            await self.connection.shutdown(CLOSE_DRAIN_S)  # cancel in flight, close channels, stop server
            await self.tasks.cancel_all()  # nothing left pending when the loop closes
        except Exception:
            log.exception("error while closing")
        finally:
            self.window.allow_close()
            self.window.close()
            self.closed.set()
