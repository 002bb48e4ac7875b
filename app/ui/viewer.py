"""Viewer: wires the window's widgets to the connection, the batch runner and the gallery;
routes results (from the bridge, on the GUI thread) to the log, the strip and the view;
runs the clean shutdown and the --screenshot mode."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QImageWriter
from PySide6.QtWidgets import QInputDialog

from app.inference.channel import ConnectionOptions
from app.inference.discovery import ModelEntry
from app.inference.result import ErrorKind, InferenceResult, Status, naming_input
from app.inference.session import TritonSession
from app.pipeline.batch import BatchCounts
from app.ui.analysis import AnalysisUi
from app.ui.batch_runner import PLACEHOLDER, BatchRunner
from app.ui.bridge import GuiBridge
from app.ui.connection import ConnectionController
from app.ui.connection_state import ConnectionState
from app.ui.export_actions import Exporter
from app.ui.gallery import Gallery
from app.ui.live_controller import LiveController
from app.ui.live_panel import LiveUi
from app.ui.main_window import MainWindow
from app.ui.server_dialog import ask_for_server
from app.ui.server_panel import LOCAL_SERVER, parse_urls
from app.ui.settings import ViewerSettings
from app.ui.tasks import TaskSet

log = logging.getLogger(__name__)

STATS_INTERVAL_MS = 250  # ~4 Hz
LOG_FLUSH_MS = 50  # results reach the log in batches (one insert per flush)
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


class Viewer(QObject):
    def __init__(self, options: ViewerOptions, executor: Executor, settings: ViewerSettings | None = None):
        super().__init__()
        self.options = options
        self.executor = executor
        self.settings = settings or ViewerSettings()
        self.exit_code = 0
        self.closed = asyncio.Event()
        self.tasks = TaskSet(on_error=lambda m: self.report(m, True))
        self.window = w = MainWindow()
        # Created here, on the GUI thread: what worker threads post runs on this thread.
        self.bridge = GuiBridge()
        self.connection = ConnectionController(executor, self.tasks, options.tritonserver, options.connection)
        self.runner = BatchRunner(self.bridge)
        self.gallery = Gallery(w.view, w.strip, w.thresholds, executor, self.tasks)
        self.exporter = Exporter(w, self.gallery, executor, self.tasks, self.report)
        self.live = LiveController(
            w.view,
            w.thresholds,
            w.stats_panel,
            executor,
            self.tasks,
            self.bridge,
            self.report,
            on_take_view=self._live_takes_view,
        )
        self.live_ui = LiveUi(w, w.file_menu, self.live, executor, self.tasks)
        self.analysis = AnalysisUi(w, w.view, self.live, executor, self.tasks, self.bridge, self.report)
        self._pending_paths: list[str] = []
        self._log_buffer: list[InferenceResult] = []
        self._shutting_down = False
        self._model: str | None = None
        self._asked_for_server = False
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
        w.server_panel.connect_requested.connect(self._on_connect_requested)
        w.server_panel.model_chosen.connect(lambda name: c.connect_to(self._session_urls(), name))
        w.paths_opened.connect(self.open_paths)
        w.close_requested.connect(self.request_close)
        w.batch_panel.cancel_requested.connect(lambda: self.runner.cancel())
        w.thresholds.changed.connect(self._save_thresholds)
        self.runner.started.connect(lambda _job, total: w.batch_panel.start(total))
        self.runner.progress.connect(lambda _job, counts: w.batch_panel.set_progress(counts.done))
        self.runner.finished.connect(self._on_batch_finished)
        self.runner.entry_added.connect(self.gallery.add_entry)
        self.runner.result.connect(self._on_batch_result)
        self.live.result.connect(self._log)
        self.gallery.load_failed.connect(lambda m: self.report(m, True))
        w.export_png_action.triggered.connect(lambda: self.exporter.export_png())
        w.export_jsonl_action.triggered.connect(lambda: self.exporter.export_jsonl(False))
        w.export_jsonl_all_action.triggered.connect(lambda: self.exporter.export_jsonl(True))
        w.export_coco_action.triggered.connect(lambda: self.exporter.export_coco(False))
        w.export_coco_all_action.triggered.connect(lambda: self.exporter.export_coco(True))
        w.clear_action.triggered.connect(self._clear)
        self._stats_timer = QTimer(self)
        self._stats_timer.setInterval(STATS_INTERVAL_MS)
        self._stats_timer.timeout.connect(self._poll_stats)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(LOG_FLUSH_MS)
        self._flush_timer.timeout.connect(self._flush_log)

    # -- start -----------------------------------------------------------------------
    def start(self) -> None:
        geometry, state = self.settings.window_state()
        if geometry is None or not self.window.restoreGeometry(geometry):
            self.window.resize(self.window.sizeHint())
        if state is not None:
            self.window.restoreState(state)
        url_text = ", ".join(self.options.urls) if self.options.urls else LOCAL_SERVER
        self.window.server_panel.set_recent(self.settings.recent_servers(), url_text)
        self._stats_timer.start()
        if self.options.camera:
            self.live.open_text(self.options.camera)  # starts once connected
        if self.options.open_paths:
            self.open_paths(self.options.open_paths)
        remembered = None if self.options.model else self.settings.model()
        model = self.options.model or remembered
        self.connection.connect_to(self.options.urls, model, model_is_hint=remembered is not None)
        if self.options.screenshot:
            self.tasks.spawn(self._screenshot_when_ready(self.options.screenshot), name="screenshot")

    def open_paths(self, paths: list[str]) -> None:
        self.window.show_hint(False)
        self.window.strip.show()
        self.window.batch_panel.show()
        if self.connection.session is None:
            self._pending_paths.extend(paths)
            self.window.statusBar().showMessage(f"{len(paths)} input(s) will run once connected")
            return
        self.gallery.expect_new_job()
        self.runner.start(paths)

    # -- connection events ---------------------------------------------------------------
    def _on_connect_requested(self, urls: list[str]) -> None:
        if urls:
            self.settings.remember_server(", ".join(urls))
        self.connection.connect_to(urls, self._model)

    def _on_local_server_unavailable(self, reason: str) -> None:
        """No local server here (e.g. the packaged app without a suitable Python): use the
        last remote server remembered, else ask for one."""
        remembered = [u for u in self.settings.recent_servers() if u != LOCAL_SERVER]
        if remembered and not self._asked_for_server:
            self._asked_for_server = True
            self._on_connect_requested(parse_urls(remembered[0]))
            return
        self._asked_for_server = True
        suggestion = remembered[0] if remembered else "localhost:8001"
        self.server_dialog = ask_for_server(self.window, reason, suggestion, self._on_connect_requested)

    def _session_urls(self) -> list[str]:
        return [] if self.connection.urls == self.connection.local_urls() else self.connection.urls

    def _on_state(self, value: str, detail: str) -> None:
        state = ConnectionState(value)
        self.window.server_panel.set_state(state, detail)
        self.window.statusBar().showMessage(f"{state}: {detail}")
        if state in (ConnectionState.FAILED, ConnectionState.DISCONNECTED):
            self.window.banner.show_error(detail)

    def _on_models_listed(self, names: list[str]) -> None:
        """A connect failed but the server answered: offer its models to choose from."""
        entries = [ModelEntry(name, "", "", "") for name in names]
        self.window.server_panel.set_models(entries, None)

    def _on_session_opened(self, session: TritonSession) -> None:
        info = session.info
        assert info is not None
        self._model = info.name
        self.runner.set_session(session)
        panel = self.window.server_panel
        panel.set_models(session.models, info.name)
        panel.set_info(info)
        self.window.view.set_keypoint_style(info.profile.skeleton, info.profile.keypoint_names)
        self.settings.set_model(info.name)
        remembered = self.settings.thresholds(info.name)
        score, iou = remembered or (info.profile.score_threshold, info.profile.iou_threshold)
        self.window.thresholds.set_values(score, iou)
        self.window.stats_panel.clear()
        self.window.live_plot.clear()
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

    # -- results (GUI thread, through the bridge) ---------------------------------------------
    def _log(self, result: InferenceResult) -> None:
        self._log_buffer.append(result)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def _on_batch_result(self, result: InferenceResult) -> None:
        """A batch input's result, sent or local (unreadable, not media): log, strip, view."""
        self._log(result)
        key = result.source
        # Not media (skipped): in the log, the counts and the exports, not in the strip.
        unread = result.request_id is None and result.status is not Status.SKIPPED
        if unread and key is not None and not self.gallery.has_entry(key):
            self.gallery.add_entry(key, PLACEHOLDER)
        self.gallery.on_result(result)
        if result.status in (Status.FAILED, Status.TIMEOUT):
            self.report(naming_input(result.source, result.error or result.status.value, result.frame), True)
            if result.error_kind is ErrorKind.UNREACHABLE:
                self.connection.report_unreachable(result.error or "")

    def _flush_log(self) -> None:
        batch, self._log_buffer = self._log_buffer, []
        self.window.request_log.add_results(batch)

    def _poll_stats(self) -> None:
        session = self.connection.session
        if session is None:
            return
        snap = session.stats.snapshot()  # cheap: counters under one lock
        self.window.stats_panel.update_stats(snap)
        self.window.live_plot.add_point(time.monotonic(), snap.p50_ms, snap.throughput)

    def _on_batch_finished(self, _job: int, counts: BatchCounts, seconds: float) -> None:
        self.window.batch_panel.finish(counts, seconds)
        self.window.statusBar().showMessage(self.window.batch_panel.summary.text())

    def report(self, message: str, error: bool) -> None:
        """Errors go where the user looks: the banner and the status bar (the log has rows)."""
        if self._shutting_down:
            return
        if error:
            self.window.banner.show_error(message)
        self.window.statusBar().showMessage(message, 0 if error else 5000)

    def _save_thresholds(self, score: float, iou: float) -> None:
        if self._model:
            self.settings.set_thresholds(self._model, score, iou)

    def _live_takes_view(self) -> None:
        self.gallery.current_key, self.gallery.current_image = None, None  # stop redrawing the view
        self.window.show_hint(False)
        if not self.window.strip.keys() and not self.runner.active():  # no images: room for the video
            self.window.strip.hide()
            self.window.batch_panel.hide()

    def _clear(self) -> None:
        self.gallery.clear()
        self.window.request_log.clear()
        self.window.show_hint(True)

    # -- screenshot ---------------------------------------------------------------------------
    def ready(self) -> bool:
        """Connected (or failed), everything opened has its result and the shown image is drawn."""
        if self.connection.state is ConnectionState.FAILED:
            return True
        if self.options.camera:
            return self.live.screenshot_ready()
        return (
            self.connection.state is ConnectionState.CONNECTED
            and not self._pending_paths
            and not self.runner.active()
            and not self.gallery.busy()
            and (not self.gallery.results or self.gallery.current_image is not None or not self._any_ok())
        )

    def _any_ok(self) -> bool:
        return any(r.ok for r in self.gallery.results.values())

    async def _screenshot_when_ready(self, path: str) -> None:
        while not self.ready():
            await asyncio.sleep(0.1)
        await asyncio.sleep(2 * STATS_INTERVAL_MS / 1000)  # let the stats and the log catch up
        self._flush_log()
        self._poll_stats()
        writer = QImageWriter(path, b"png")
        if not writer.write(self.window.grab().toImage()):
            self.report(f"could not write the screenshot {path}: {writer.errorString()}", True)
            self.exit_code = 1
        elif self.connection.state is ConnectionState.FAILED or self.live.error is not None:
            self.exit_code = 1
        self.request_close()

    # -- shutdown -------------------------------------------------------------------------------
    def request_close(self) -> None:
        """From the window's close, File > Quit, SIGINT/SIGTERM or --screenshot. Idempotent."""
        if self._shutting_down:
            return
        self._shutting_down = True
        self.window.hide()
        self.tasks.spawn(self._shutdown(), name="shutdown")

    async def _shutdown(self) -> None:
        try:
            self.settings.set_window_state(self.window.saveGeometry(), self.window.saveState())
            self.settings.sync()
            self._stats_timer.stop()
            self._flush_timer.stop()
            self.bridge.close()  # from now on results are dropped, not delivered
            await self.live.shutdown()  # stop the stream, release the capture on its thread
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
