"""ResultRouter: where each result goes, on the GUI thread (the bridge delivered it). A batch's
result (the batch runner's or an evaluation's) goes to the request log, the statistics, the
thumbnails, the picture and the banner; a live result to the log and the live statistics. A
result of a job whose list was cleared or replaced since feeds the log and the session's
statistics only. The log takes results in batches (one insert, one repaint per flush)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from superqt.utils import QSignalThrottler

from app.inference.result import ErrorKind, InferenceResult, Status, naming_input
from app.pipeline.batch import BatchCounts
from app.pipeline.live import LiveState
from app.ui.analysis.stats_controller import StatsController
from app.ui.batch.batch_browser import BatchBrowser
from app.ui.batch.batch_runner import PLACEHOLDER
from app.ui.batch.gallery import Gallery
from app.ui.live.live_controller import LiveController
from app.ui.main_window import MainWindow
from app.ui.state.viewer_state import RETIRED, Scope, ViewerState
from app.ui.widgets.banner import Context

# Results reach the log in batches (one insert, and one repaint of the log, per flush): at
# 60 results/s a 50 ms flush repainted the table 20 times a second on the GUI thread.
LOG_FLUSH_MS = 200


class ResultRouter(QObject):
    def __init__(
        self,
        state: ViewerState,
        window: MainWindow,
        gallery: Gallery,
        browser: BatchBrowser,
        stats: StatsController,
        live: LiveController,
        report: Callable[[str, bool, Context], None],
        report_unreachable: Callable[[str], None],
    ) -> None:
        """`report(message, error, context)`: the banner and status bar; `report_unreachable`:
        a request could not reach the server (the connection shows it at once)."""
        super().__init__()
        self.state, self.window, self.gallery, self.browser = state, window, gallery, browser
        self.stats, self.live = stats, live
        self._report, self._report_unreachable = report, report_unreachable
        self.evaluation_job = RETIRED  # the state's job id of the evaluation's run (each run: one less)
        self._log_buffer: list[InferenceResult] = []
        # Trailing: the first result of a quiet spell waits LOG_FLUSH_MS for the ones after it.
        self._log_flush = QSignalThrottler(QSignalThrottler.EmissionPolicy.Trailing, parent=self)
        self._log_flush.setTimeout(LOG_FLUSH_MS)
        self._log_flush.triggered.connect(self.flush_log)

    # -- the request log -------------------------------------------------------------------------
    def _log(self, result: InferenceResult) -> None:
        self._log_buffer.append(result)
        self._log_flush.throttle()

    def flush_log(self) -> None:
        """What waits for the log goes in now (an export or a screenshot reads the log)."""
        batch, self._log_buffer = self._log_buffer, []
        if batch:
            self.window.request_log.add_results(batch)

    def stop(self) -> None:
        """The window closes: no flush comes after."""
        self._log_flush.cancel()

    # -- a batch's results and progress --------------------------------------------------------------
    def entry_added(self, job: int, key: str, thumbnail: object, identity: object) -> None:
        if self.state.feeds(job):  # else a list cleared or replaced since
            self.gallery.add_entry(key, thumbnail, identity, job)  # type: ignore[arg-type]

    def batch_result(self, job: int, result: InferenceResult) -> None:
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
            self._report(message, True, Context.BATCH)
            if result.error_kind is ErrorKind.UNREACHABLE:
                self._report_unreachable(result.error or "")

    # Only the jobs of the list shown move its progress (not one cancelled by a new list).
    def batch_started(self, job: int, total: int) -> None:
        if self.state.feeds(job):
            self.window.batch_panel.start(total)

    def batch_progress(self, job: int, counts: BatchCounts) -> None:
        if self.state.feeds(job):
            self.window.batch_panel.set_progress(counts.done)

    def batch_finished(self, job: int, counts: BatchCounts, seconds: float) -> None:
        if not self.state.feeds(job):
            return  # a list cleared or replaced since: its summary is not this list's
        self.window.batch_panel.finish(counts, seconds)
        self.stats.batch_finished(counts)
        self.window.statusBar().showMessage(self.window.batch_panel.summary.text())

    # -- an evaluation's run: its images are the batch, fed as a job of its own ----------------
    def next_evaluation_job(self) -> int:
        """A new id for each run, below the batch runner's and RETIRED: a late result of an
        earlier run no longer feeds the list."""
        self.evaluation_job -= 1
        return self.evaluation_job

    def evaluation_entry_added(self, key: str, thumbnail: object, identity: object) -> None:
        self.entry_added(self.evaluation_job, key, thumbnail, identity)

    def evaluation_result(self, result: InferenceResult) -> None:
        self.batch_result(self.evaluation_job, result)

    def evaluation_finished(self, _job: int, counts: BatchCounts, seconds: float) -> None:
        self.batch_finished(self.evaluation_job, counts, seconds)

    # -- the live stream -------------------------------------------------------------------------------
    def live_result(self, result: InferenceResult) -> None:
        self._log(result)
        self.stats.add(result, Scope.LIVE)

    def live_state(self, state: LiveState, _detail: str) -> None:
        if state is LiveState.PLAYING and self.live.meter.results == 0:
            self.window.banner.clear(Context.LIVE)  # a new stream: earlier stream errors are history
            self.stats.live_started()
        self.state.set_live(state)
