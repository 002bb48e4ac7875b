"""Viewer: the composition root. It builds the window's parts and hands each its callbacks as it
is built, connects their signals, and fans a session's opening and closing out to them. What
the parts do lives in their own modules: `ConnectionUi` (the connection as the window shows
it, server switching, the session spec), `ResultRouter` (each result to the log, the
statistics, the thumbnails and the picture), `ImageList` (the inputs opened, batch or live
view), `ViewerShutdown` (the clean exit). The truth it shows lives in `ViewerState`
(app/ui/state); the profile choice, the server statistics and the --screenshot mode are
modules of their own."""

from __future__ import annotations

from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction

from app.inference.core.session import TritonSession
from app.inference.introspection.discovery import ModelInfo
from app.inference.profile_kinds import KeypointStyle
from app.pipeline.exports import ModelVocabulary
from app.ui.action_states import ActionStates
from app.ui.analyse_menu import AnalysisUi
from app.ui.analysis.csv_export import write_stats_csv, write_table_csv
from app.ui.analysis.request_log import COLUMNS as LOG_COLUMNS
from app.ui.analysis.server_split import ServerSplitPoller
from app.ui.analysis.stats_controller import StatsController
from app.ui.base.bridge import GuiBridge
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import fit_window
from app.ui.batch.batch_browser import BatchBrowser
from app.ui.batch.batch_runner import BatchRunner
from app.ui.batch.export_actions import Exporter
from app.ui.batch.gallery import Gallery
from app.ui.connection_ui import ConnectionUi
from app.ui.evaluation.evaluation_ui import EvaluationUi
from app.ui.help import HelpUi
from app.ui.image_list import ImageList
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.main_window import MainWindow
from app.ui.model_file_opener import ModelFileOpener
from app.ui.profile_choice import ProfileChoice
from app.ui.result_router import ResultRouter
from app.ui.screenshot import Screenshot
from app.ui.server.connection import ConnectionController
from app.ui.server_tools.metrics_source import EmbeddedMetrics
from app.ui.server_tools.server_tools_ui import ServerToolsUi
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.viewer_options import ViewerOptions
from app.ui.viewer_shutdown import Step, ViewerShutdown
from app.ui.wall.wall_controller import WallController
from app.ui.wall_setup import build_wall
from app.ui.widgets.banner import Context, split_detail
from app.ui.widgets.thresholds import why_not_applicable
from app.ui.xray_ui import XRayUi

__all__ = ["Viewer", "ViewerOptions"]

CLOSE_DRAIN_S = 0.2


class Viewer(QObject):
    def __init__(self, options: ViewerOptions, executor: Executor, settings: ViewerSettings | None = None):
        super().__init__()
        self.options = options
        self.executor = executor
        self.settings = settings or ViewerSettings()
        self.exit_code = 0
        self.tasks = TaskSet(on_error=lambda m: self.report(m, True))
        self.state = ViewerState()
        self.window = w = MainWindow()
        # Created here, on the GUI thread: what worker threads post runs on this thread.
        self.bridge = GuiBridge()
        # (The lambdas below reach parts built further down; none is called before they are.)
        self.connection_ui = ConnectionUi(
            w,
            self.state,
            self.settings,
            options,
            executor,
            self.bridge,
            profile_for=lambda model: self.profiles.profile_for(model),
            session_in_use=lambda: self.runner.active() or self.evaluation.controller.active(),
        )
        self.connection = self.connection_ui.controller
        # A model file dropped or opened (Model > Open model file…): loaded on the server.
        self.model_files = ModelFileOpener(
            self.connection, executor, self.tasks, lambda m, e: self.report(m, e, Context.CONNECTION)
        )
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
        )
        self.live_ui = LiveUi(
            w,
            w.file_menu,
            w.view,
            self.live,
            executor,
            self.tasks,
            opened_dir=lambda: self.window.open_dir,
            remember_record_dir=lambda folder: self.settings.set_last_dir("record", folder),
            video_dir=lambda: self.settings.last_dir("video"),
            remember_video_dir=lambda folder: self.settings.set_last_dir("video", folder),
        )
        self.stats = StatsController(
            self.state,
            w.stats_panel,
            w.live_plot,
            self._in_flight,
            lambda: self.wall.update_stats_panel(self.live.update_stats_panel),
            line=w.stats_line.setText,
        )
        self.server_split = ServerSplitPoller(
            w.time_split, lambda: self.connection.session, executor, self.tasks
        )
        self.analysis = AnalysisUi(
            w,
            w.view,
            self.live,
            executor,
            self.tasks,
            self.bridge,
            self.report,
            profile_for=lambda model: self.profiles.profile_for(model),
            compare_errors=(
                lambda m, e: self.report(m, e, Context.COMPARE),
                lambda: w.banner.clear(Context.COMPARE),
            ),
            batch_paths=lambda: self.state.roots() if self.state.mode is Mode.BATCH else [],
        )
        # Analyse > Trace requests and the Request X-ray dock (the Request log's selection).
        self.xray = XRayUi(w, self.analysis.menu, self.live, self.runner, self.bridge, self.report)
        self.server_tools = ServerToolsUi(
            w,
            (w.model_menu, w.tools_menu, w.view_menu),
            executor,
            self.tasks,
            self.bridge,
            metrics_option=options.metrics_url,
            local_server=lambda: local_server_metrics(self.connection),
            settings=self.settings,
            image_paths=self._ok_paths,
            profile_for=lambda model: self.profiles.profile_for(model),
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
        w.view_menu.insertAction(w.view_menu_toolbar_anchor, self.analysis.tracks_dock.toggleViewAction())
        self.live_ui.add_tracking(self.analysis.track_action)
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
            self.connection_ui.profile_model,
            self.connection_ui.connect_model,
            options.profile_overrides,
            options.model,
        )
        self.router = ResultRouter(
            self.state,
            w,
            self.gallery,
            self.browser,
            self.stats,
            self.live,
            self.report,
            self.connection.report_unreachable,
        )
        self.images = ImageList(
            w,
            self.state,
            self.settings,
            self.connection_ui,
            self.runner,
            self.gallery,
            self.browser,
            self.stats,
            self.router,
            self.live,
            self.live_ui,
            self.analysis.tracking,
        )
        # The wall of streams, the lines, zones and heat maps of live pictures: app/ui/wall/, zones/.
        self.wall_ui, self.zones = build_wall(
            w,
            self.state,
            self.settings,
            self.live,
            self.live_ui,
            self.images,
            self.router,
            self.analysis,
            self.profiles.profile_for,
            executor,
            self.tasks,
            self.bridge,
            lambda m, e: self.report(m, e, Context.LIVE),
        )
        self.wall = self.wall_ui.wall
        self.screenshot = Screenshot(
            w,
            self.connection,
            self.runner,
            self.gallery,
            self.live,
            bool(options.camera or options.cameras),
            lambda: self.images.has_pending,
            lambda: (self.connection_ui.failure, self.connection_ui.models_listed),
        )
        if options.cameras:
            wait_for_the_wall(self.screenshot, self.wall)
        self.help = HelpUi(w, executor, self.tasks, lambda: self.connection.session)
        self.shutdown = ViewerShutdown(w, self.settings, self.tasks, self._shutdown_steps())
        self.closed = self.shutdown.closed
        self._wire()

    def _wire(self) -> None:
        w, c, images, router = self.window, self.connection, self.images, self.router
        c.session_opened.connect(self._on_session_opened)
        c.session_closing.connect(self._on_session_closing)
        self.connection_ui.changed.connect(images.show_pending)
        self.settings.on_warning = lambda message: self.report(message, True)
        w.profile_action.triggered.connect(self.profiles.choose)
        w.detected_profile_action.triggered.connect(lambda: self.profiles.set_profile(None))
        self.state.mode_changed.connect(images.show_mode)
        w.load_test_action.triggered.connect(lambda: self.analysis.open_load_test(self._ok_paths()))
        self.server_tools.models_changed.connect(
            lambda entries: w.server_panel.set_models(entries, self.state.model)
        )
        self.server_tools.model_reloaded.connect(self._on_model_reloaded)
        w.paths_opened.connect(self.open_paths)
        self.model_files.attach(w.open_model_file_action, w, lambda: w.open_dir)
        w.paths_added.connect(lambda paths: self.open_paths(paths, add=True))
        w.sample_requested.connect(self.try_sample)
        w.empty_state.open_camera.connect(self.live_ui.open_camera)
        w.close_requested.connect(self.request_close)
        w.layout_reset.connect(self.analysis.restore_docks)
        w.batch_panel.cancel_requested.connect(lambda: self.runner.cancel())
        wire_evaluation(w, self.evaluation, self.analysis, images, router)
        w.thresholds.changed.connect(self._save_thresholds)
        w.thresholds.opacity_changed.connect(self.settings.set_mask_opacity)
        wire_results(self.runner, self.live, router)
        self.live.view_taken.connect(images.live_takes_view)
        self.gallery.load_failed.connect(lambda m: self.report(m, True, Context.BATCH))
        # At once, not on the next pass: a key held down must find Next/Previous up to date.
        self.browser.moved.connect(lambda: self.actions.apply())
        wire_navigation(w, self.browser, images, self.live_ui.toolbar.stop_action)
        w.export_png_action.triggered.connect(lambda: self.exporter.export_png())
        w.export_jsonl_action.triggered.connect(lambda: self.exporter.export_jsonl(False))
        for fmt, action in w.export_all_actions.items():
            action.triggered.connect(lambda _checked=False, f=fmt: self.exporter.export_all(f))
        w.export_stats_action.triggered.connect(lambda: self.export_stats_csv())
        w.export_log_action.triggered.connect(lambda: self.export_log_csv())
        w.clear_action.triggered.connect(images.clear)

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
        opacity = self.settings.mask_opacity()
        if opacity is not None:
            self.window.thresholds.set_mask_opacity(opacity)
        self.connection_ui.start()
        self.server_split.start()
        self.stats.start()
        self.images.show_mode(self.state.mode)
        if self.options.camera:
            self.live.open_text(self.options.camera)  # starts once connected
        for camera in self.options.cameras:
            self.wall_ui.add_source(camera)  # a wall of streams; each starts once connected
        if self.options.open_paths:
            self.open_paths(self.options.open_paths)
        remembered = None if self.options.model else self.settings.model()
        model = self.options.model or remembered
        model = self.model_files.model_of_option(model)  # `--model FILE.onnx`: once connected
        self.connection.connect_to(self.options.urls, model, model_is_hint=remembered is not None)
        if self.options.screenshot:
            self.tasks.spawn(self._take_screenshot(self.options.screenshot), name="screenshot")

    def open_paths(self, paths: list[str], add: bool = False) -> None:
        """Files and folders: a new list, or with `add` more of the list shown (`ImageList`).
        A model file among them (.onnx, .tflite) is loaded on the server instead
        (app.ui.model_file_opener)."""
        others = self.model_files.take_files(paths)
        if others or not paths:
            self.images.open_paths(others, add)

    def try_sample(self) -> None:
        self.images.try_sample()

    def _ok_paths(self) -> list[str]:
        """The current batch's images that ran (what the load test and the tune send)."""
        return [key for key in self.gallery.results if self.gallery.results[key].ok]

    def _on_model_reloaded(self, name: str) -> None:
        """Loaded again (Model > Repository, Tune's Apply): the model shown is read again."""
        if name == self.state.model and self.connection.session is not None and not self.runner.active():
            self.connection_ui.connect_model(name)

    # -- a session opens or closes: every part follows ------------------------------------------------
    def _on_session_opened(self, session: TritonSession) -> None:
        info = session.info
        assert info is not None
        switched = self.state.model is not None and self.state.model != info.name
        self.state.model = info.name
        self.profiles.model_opened(info.name)
        self.runner.set_session(session)
        self.server_split.session_opened(session)
        show_model(self.window, self.settings, info)
        if switched:
            self.images.model_switched()
        self.images.run_pending()
        self.live.set_session(session)
        self.wall.set_session(session)
        self.analysis.set_session(session)
        self.xray.set_session(session)
        self.server_tools.set_session(session)
        self.evaluation.set_session(session)

    def _on_session_closing(self, _session: TritonSession) -> None:
        self.runner.cancel()  # stop feeding the old session; its requests end as cancelled
        self.runner.set_session(None)
        self.live.set_session(None)  # the stream stops feeding the old session
        self.wall.set_session(None)  # the wall's too (and their own sessions over its channels)
        self.analysis.set_session(None)
        self.xray.set_session(None)  # the old session's tracer is read once more, then let go
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

    def report(self, message: str, error: bool, context: Context = Context.OTHER) -> None:
        """Errors go where the user looks: the banner (owned by `context`) and the status bar."""
        if self.shutdown.closing:
            return
        if error:
            self.window.banner.show_error(message, context)
        lead, _raw = split_detail(message)
        self.window.statusBar().showMessage(lead, 0 if error else 5000)

    def _save_thresholds(self, score: float, iou: float) -> None:
        if self.state.model:
            self.settings.set_thresholds(self.state.model, score, iou)

    # -- statistics and log as CSV --------------------------------------------------------------
    def export_stats_csv(self, path: str | None = None) -> None:
        snapshots = self.stats.snapshots()
        self.exporter.export_table(
            "Export the statistics (CSV)", "statistics", lambda p: write_stats_csv(p, snapshots), path
        )

    def export_log_csv(self, path: str | None = None) -> None:
        self.router.flush_log()
        rows = self.window.request_log.visible_rows()
        title = f"Export the {len(rows)} request log rows shown (CSV)"
        self.exporter.export_table(title, "requests", lambda p: write_table_csv(p, LOG_COLUMNS, rows), path)

    # -- screenshot ---------------------------------------------------------------------------
    async def _take_screenshot(self, path: str) -> None:
        self.exit_code = await self.screenshot.take(path, self._settle_for_screenshot, self.report)
        self.request_close()

    def _settle_for_screenshot(self) -> None:
        """What is shown catches up with the last results before the window is grabbed."""
        self.router.flush_log()
        self.stats.poll()
        self.window.detections_panel.refresh()

    # -- shutdown -------------------------------------------------------------------------------
    def request_close(self) -> None:
        """From the window's close, File > Quit, SIGINT/SIGTERM or --screenshot. Idempotent."""
        self.shutdown.request()

    def _shutdown_steps(self) -> list[Step]:
        return [
            ("settings", lambda: save_settings(self.settings, self.live_ui, self.evaluation)),
            ("timers", self._stop_timers),
            ("dialogs", self._close_dialogs),
            ("batch", self.runner.cancel),  # stop submitting first: nothing new goes out
            ("bridge", self.bridge.close),  # from now on results are dropped, not delivered
            ("live", self.live.shutdown),  # stop the stream, release the capture on its thread
            ("wall", self.wall.shutdown),  # every stream of the wall at once, in parallel
            ("evaluation", self.evaluation.shutdown),  # an evaluation's run stops, its thread ends
            ("analysis", self.analysis.shutdown),  # the compare's runs and sessions, a load ramp
            ("x-ray", self.xray.shutdown),  # its polling stops (the session's close restores tracing)
            ("server tools", self.server_tools.shutdown),  # a tune restores the original config first
            ("connection", lambda: self.connection.shutdown(CLOSE_DRAIN_S)),  # cancel, close, stop
            ("tasks", self.tasks.cancel_all),  # nothing left pending when the loop closes
        ]

    def _stop_timers(self) -> None:
        self.stats.stop()
        self.server_split.stop()
        self.router.stop()

    def _close_dialogs(self) -> None:
        """The Help dialog and a protocol offer, if open."""
        self.help.close()
        self.connection_ui.close_dialogs()


def save_settings(settings: ViewerSettings, live_ui: LiveUi, evaluation: EvaluationUi) -> None:
    """At close: the folders the next recording and evaluation start in, then to disk."""
    settings.set_last_dir("record", live_ui.record_dir)
    if evaluation.controller.choice is not None:
        # Where the next dataset is looked for: beside this one.
        settings.set_last_dir("evaluate", str(Path(evaluation.controller.choice.dataset).parent))
    settings.sync()


def wait_for_the_wall(screenshot: Screenshot, wall: WallController) -> None:
    """--screenshot with several --camera: taken once every stream of the wall is shown."""
    screenshot.live_ready = wall.screenshot_ready
    screenshot.live_error = wall.first_error
    wall.refreshed.connect(screenshot.wake)


def local_server_metrics(connection: ConnectionController) -> EmbeddedMetrics | None:
    """The embedded server's gRPC address and metrics URL, while it runs."""
    server = connection.server
    if server is None or not server.running:
        return None
    return EmbeddedMetrics(server.grpc_url, server.metrics_url)


def show_model(window: MainWindow, settings: ViewerSettings, info: ModelInfo) -> None:
    """A model opened: its keypoint drawing, and its thresholds (the user's for it, remembered,
    else its profile's); the model remembered for the next start."""
    window.view.set_keypoint_style(
        info.profile.skeleton,
        info.profile.keypoint_names,
        info.profile.keypoint_style is KeypointStyle.DOTS,
    )
    settings.set_model(info.name)
    remembered = settings.thresholds(info.name)
    score, iou = remembered or (info.profile.score_threshold, info.profile.iou_threshold)
    window.thresholds.set_values(score, iou)
    window.thresholds.set_applicable(*why_not_applicable(info.name, info.profile.task))


def wire_evaluation(
    w: MainWindow, evaluation: EvaluationUi, analysis: AnalysisUi, images: ImageList, router: ResultRouter
) -> None:
    """Analyse > Evaluate against labels…: the dataset's images become the batch, their
    results go where a batch's go (log, statistics, thumbnails, picture)."""
    ev = evaluation.controller
    analysis.evaluate_action.triggered.connect(lambda: evaluation.ask())
    w.batch_panel.cancel_requested.connect(ev.cancel)
    ev.starting.connect(images.evaluation_starting)
    # The evaluation's run feeds the list as a job of its own (the router's evaluation job).
    ev.entry_added.connect(router.evaluation_entry_added)
    ev.result.connect(router.evaluation_result)
    ev.run_started.connect(w.batch_panel.start)
    ev.run_progress.connect(w.batch_panel.set_progress)
    ev.run_finished.connect(router.evaluation_finished)


def wire_results(runner: BatchRunner, live: LiveController, router: ResultRouter) -> None:
    """The batch's and the live stream's results to the router (log, statistics, picture)."""
    runner.started.connect(router.batch_started)
    runner.progress.connect(router.batch_progress)
    runner.finished.connect(router.batch_finished)
    runner.entry_added.connect(router.entry_added)
    runner.result.connect(router.batch_result)
    live.result.connect(router.live_result)
    live.state_changed.connect(router.live_state)


def wire_navigation(w: MainWindow, browser: BatchBrowser, images: ImageList, stop: QAction) -> None:
    """Moving in the batch: the strip, Next/Previous/First/Last; from the video, Next/Previous
    and Stop first bring the batch back at the image the user left (not at 1/N)."""
    browser.navigated.connect(lambda: images.batch_takes_view(reselect=False))
    w.strip.selected.connect(lambda _key: images.batch_takes_view(reselect=False))

    def step(delta: int) -> None:
        if not images.back_to_batch():
            browser.step(delta)

    w.next_action.triggered.connect(lambda: step(1))
    w.prev_action.triggered.connect(lambda: step(-1))
    stop.triggered.connect(images.back_to_batch)  # after the toolbar stopped the run
    w.first_action.triggered.connect(browser.first)
    w.last_action.triggered.connect(browser.last)
