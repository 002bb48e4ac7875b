"""ImageList: the list of inputs the user opened (files, folders, the sample, an evaluation's
dataset) and which of the batch and the live stream has the picture. Opening starts a batch
job (or waits, saying for what, until a session is open); a new list cancels what ran for the
old one; a model switch runs the list again; the batch taking the view back stops a stream."""

from __future__ import annotations

from pathlib import Path

from app.pipeline.connection.state import ConnectionState
from app.resources import sample_image
from app.ui.analysis.stats_controller import StatsController
from app.ui.base.settings import ViewerSettings
from app.ui.batch.batch_browser import BatchBrowser
from app.ui.batch.batch_runner import BatchRunner
from app.ui.batch.gallery import Gallery
from app.ui.connection_ui import ConnectionUi
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.live.live_tracking import LiveTracking
from app.ui.main_window import MainWindow
from app.ui.result_router import ResultRouter
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.widgets.banner import Context


class ImageList:
    def __init__(
        self,
        window: MainWindow,
        state: ViewerState,
        settings: ViewerSettings,
        connection: ConnectionUi,
        runner: BatchRunner,
        gallery: Gallery,
        browser: BatchBrowser,
        stats: StatsController,
        router: ResultRouter,
        live: LiveController,
        live_ui: LiveUi,
        tracking: LiveTracking,
    ) -> None:
        self.window, self.state, self.settings, self.connection = window, state, settings, connection
        self.runner, self.gallery, self.browser, self.stats = runner, gallery, browser, stats
        self.router, self.live, self.live_ui, self.tracking = router, live, live_ui, tracking
        self._pending_paths: list[list[str]] = []  # opened before a session existed, by open
        self._rerun_list = False  # the list waits to run again with a new model (live had the view)
        self._batch_key: str | None = None  # the batch image shown before live video took the view

    @property
    def has_pending(self) -> bool:
        """Inputs opened that wait for a session (--screenshot waits for them too)."""
        return bool(self._pending_paths)

    # -- opening ---------------------------------------------------------------------------------
    def open_paths(self, paths: list[str], add: bool = False) -> None:
        """Files and folders (dropped, opened, or the sample): a new list, or with `add` (File >
        Add to the list, Shift on drop) more of the list shown. An empty path is refused with a
        word (it would mean the current folder); the others still open."""
        kept = [p for p in paths if str(p).strip()]
        if kept:
            self._open_list(kept, add)
        if len(kept) < len(paths):
            refused = len(paths) - len(kept)
            self.window.banner.show_error(
                f"{refused} empty path(s) not opened: name a file or folder", Context.BATCH
            )

    def try_sample(self) -> None:
        self.open_paths([str(sample_image())])

    def _open_list(self, paths: list[str], add: bool) -> None:
        if not add:
            self._new_list()
        first = Path(paths[0])
        self.window.open_dir = str(first if first.is_dir() else first.parent)
        self.settings.set_last_dir("open", self.window.open_dir)
        self.batch_takes_view()
        self.window.banner.clear(Context.BATCH)  # a new batch: the last one's errors are history
        if self.connection.controller.session is None:
            self._pending_paths.append([str(p) for p in paths])
            self.window.statusBar().showMessage(self.show_pending())
            return
        self._run_batch([str(p) for p in paths])

    def _run_batch(self, paths: list[str]) -> None:
        self.window.view_note.hide()
        self.gallery.expect_new_job()
        self.stats.batch_started()
        self.state.add_job(self.runner.start(paths), paths)

    def run_pending(self) -> None:
        """A session is open: what was opened before it runs now."""
        pending, self._pending_paths = self._pending_paths, []
        for paths in pending:
            self._run_batch(paths)

    def _new_list(self) -> None:
        """The list starts afresh: what runs for the old one is cancelled (its late results go
        to the log and the session's statistics only), its pictures, boxes and names go."""
        self.runner.cancel()
        self._pending_paths.clear()
        self.show_pending()
        self._rerun_list = False
        self.gallery.clear()
        self.browser.clear()
        if not self.live.active:  # (a stream that plays on keeps its tracks)
            self.tracking.reset()  # nothing of an earlier stream stays drawn either

    def clear(self) -> None:
        """File > Clear the image list: what runs for it stops, nothing of it stays drawn."""
        self._new_list()
        self.window.request_log.clear()
        self.window.banner.clear(Context.BATCH)
        self.state.set_mode(Mode.LIVE if self.live.active else Mode.EMPTY)

    def evaluation_starting(self, roots: list[str]) -> None:
        """Analyse > Evaluate against labels…: the dataset's images become the list."""
        self.clear()
        self.state.add_job(self.router.next_evaluation_job(), roots)
        self.batch_takes_view()
        self.gallery.expect_new_job()
        self.stats.batch_started()

    def show_pending(self) -> str:
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
        state = self.connection.controller.state
        if state is ConnectionState.FAILED and self.connection.models_listed:
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

    # -- another model -------------------------------------------------------------------------------
    def model_switched(self) -> None:
        """Another model: nothing of the old one stays drawn (boxes, masks, classes, trails);
        the list shown runs again with the new model."""
        self.tracking.reset()
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
        if roots and self.state.has_entries() and self.connection.controller.session is not None:
            self._run_batch(roots)

    # -- modes: what the middle of the window shows (the state's; the window follows) ----------
    def show_mode(self, mode: Mode) -> None:
        self.window.set_mode(mode)
        # The live toolbar has no use while browsing a batch unless a stream is open.
        self.live_ui.toolbar.setVisible(mode is not Mode.BATCH or self.live.has_source)

    def batch_takes_view(self, reselect: bool = True) -> None:
        """The batch shows again (opened, or the user moves in it): a playing stream stops."""
        if self.state.mode is Mode.BATCH:
            return
        if self.live.active:
            self.live.stop()  # one picture at a time: the stream stops, its last frame goes
            self.window.statusBar().showMessage("Live stream stopped: showing the batch", 5000)
        self.live.release_view()
        self.tracking.reset()  # the stream's trails go with its pictures
        self.window.banner.clear(Context.LIVE)
        self.state.set_mode(Mode.BATCH)
        if self._rerun_list:  # the model changed while the stream had the view
            self._run_list_again()
        key, self._batch_key = self._batch_key, None
        if reselect and key is not None and self.state.current_key is None:
            self.gallery.select(key)  # draw the batch's image again

    def back_to_batch(self) -> bool:
        """After Stop (or Next/Previous while video has the view): the batch again, at the
        image shown before the video took the view. False when there is no batch to go to."""
        if self.state.mode is not Mode.LIVE or not self.state.has_entries():
            return False
        self.batch_takes_view()
        return True

    def live_takes_view(self) -> None:
        self.window.statusBar().clearMessage()  # e.g. the batch's summary: not about the video
        self._batch_key = self.state.current_key or self._batch_key
        self.state.select(None)  # the batch stops redrawing the view
        self.window.banner.clear(Context.BATCH)
        self.state.set_mode(Mode.LIVE)
