"""Tools > Tune…: the server-config search (app.pipeline.tune) from the viewer. Pick the lists
(the model's current values shown), Start: it runs in the background with progress, time
left and Cancel (the original config is loaded back); every trial's levels appear in the
plot (throughput against p95, the Pareto front, the recommendation) and the table. Then
Apply (the recommended config loaded on the server, after a confirmation naming the server
and the model), Save config.pbtxt…, and CSV / PNG exports (written whole or not at all).

Closing the window (or the viewer) while a tune runs cancels it; the tune's worker restores
the original config, and the viewer waits for that (bounded) before it stops the server."""

from __future__ import annotations

import asyncio
import dataclasses
import html
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, TypeVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.inference.core.spec import ProfileSource, SessionSpec
from app.inference.introspection.repository import (
    RepositoryControl,
    RepositoryError,
    control_disabled_message,
)
from app.inference.protocol import Endpoint
from app.inference.transports.channel import ConnectionOptions
from app.pipeline.tune import TunePhase, TuneProgress, TuneResult
from app.pipeline.tune_analysis import TrialResult, pareto_front
from app.pipeline.tune_settings import TrialSettings, settings_of, trial_mark_of
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.base.window_fit import secondary_window
from app.ui.server_tools.tune_form import TuneForm
from app.ui.server_tools.tune_outputs import TuneOutputs
from app.ui.server_tools.tune_plot import TunePlot
from app.ui.server_tools.tune_runner import TuneReports, TuneRunner, TuneTarget
from app.ui.server_tools.tune_table import TuneTable

T = TypeVar("T")
RESTORE_WAIT_S = 60.0  # the viewer closing waits this long at most for the restore
PHASES = {
    TunePhase.LOADING: "loading the trial config…",
    TunePhase.RESTORING: "restoring the original config…",
}


def format_left(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def read_model(
    endpoint: Endpoint, options: ConnectionOptions | None, model: str
) -> tuple[TrialSettings, bool, str | None]:
    """Blocking (the executor): the model's settings now, whether the server lets us load,
    and the mark of a trial config left by an earlier tune."""
    with RepositoryControl(endpoint, options) as control:
        config = control.config(model)
        return settings_of(config), control.control_enabled(), trial_mark_of(config)


class TuneWindow(QDialog):
    finished_tune = Signal(str)  # the summary (or why it stopped)
    applied = Signal(str)  # the model now runs with the recommended config

    def __init__(self, parent: QWidget | None, bridge: GuiBridge, executor: Executor, tasks: TaskSet) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tune the server: find the best config on your images")
        self.setModal(False)
        self._bridge, self._executor, self._tasks = bridge, executor, tasks
        self._endpoint: Endpoint | None = None
        self._options: ConnectionOptions | None = None
        self._spec = SessionSpec()
        self._profile_for: Callable[[str | None], ProfileSource] = lambda _model: ProfileSource()
        self._paths: tuple[str, ...] = ()
        self._metrics_url: str | None = None
        self._control_enabled: bool | None = None
        self._runner: TuneRunner | None = None
        self._reading: str | None = None  # the model whose config is being read
        self.trials: list[TrialResult] = []
        self.tune_result: TuneResult | None = None
        self.last_progress: TuneProgress | None = None
        self.last_error: str | None = None

        self.outputs = TuneOutputs(self, executor, self._say)
        self.form = TuneForm()
        self.start_button = QPushButton("Start")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop the tune; the original config is loaded back")
        self.apply_button = QPushButton("Apply…")
        self.apply_button.setToolTip("Load the recommended config on the server (asks first)")
        self.save_button = QPushButton("Save config.pbtxt…")
        self.csv_button = QPushButton("Export CSV…")
        self.png_button = QPushButton("Export PNG…")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("ready")
        self.plot = TunePlot()
        self.table = TuneTable()
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setStyleSheet("color: #b26a00")
        self.notes.hide()

        buttons = QHBoxLayout()
        for button in (self.start_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.apply_button, self.save_button, self.csv_button, self.png_button):
            buttons.addWidget(button)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.plot)
        split.addWidget(self.table)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(split, 1)
        layout.addWidget(self.summary)
        layout.addWidget(self.message)
        layout.addWidget(self.notes)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.apply_button.clicked.connect(self.ask_apply)
        self.save_button.clicked.connect(lambda: self._export("config"))
        self.csv_button.clicked.connect(lambda: self._export("csv"))
        self.png_button.clicked.connect(lambda: self._export("png"))
        self.form.model_chosen.connect(self._read_model)
        self.resize(1000, 720)
        secondary_window(self)  # fits the screen, frame included; Esc / Ctrl+W close it
        self._update_buttons()

    # -- what to tune ----------------------------------------------------------------------------
    def prepare(
        self,
        spec: SessionSpec,
        models: Sequence[str],
        model: str | None,
        paths: Sequence[str],
        metrics_url: str | None,
        profile_for: Callable[[str | None], ProfileSource],
    ) -> None:
        """What the viewer's session was opened with (its first server, TLS, headers,
        transport), the server's ready models, the model shown, the current images, where the
        server's metrics are, and the profile the viewer uses for a model. Not while a tune
        runs."""
        if self.running:
            return
        self._spec, self._profile_for = spec, profile_for
        self._endpoint, self._options, self._metrics_url = spec.endpoints[0], spec.connection, metrics_url
        self._paths = tuple(paths)
        self.form.set_models(sorted(models), model)
        what = f"{len(paths)} image(s) of the current batch" if paths else "the bundled sample photograph"
        self.form.images.setText(f"{what} · server {spec.urls[0]}")
        self._read_model()

    @property
    def url(self) -> str | None:
        """The server the next tune runs on."""
        return None if self._endpoint is None else self._endpoint.url

    @property
    def model(self) -> str | None:
        return self.form.chosen_model()

    def _read_model(self, *_args: object) -> None:
        model = self.model
        if model is None or self._endpoint is None:
            return
        self._reading, self._control_enabled = model, None
        self.form.set_current(None, "reading its config…")
        self._update_buttons()
        self._tasks.spawn(self._read(self._endpoint, model), name="tune: read the model")

    async def _read(self, endpoint: Endpoint, model: str) -> None:
        try:
            settings, enabled, mark = await self._call(read_model, endpoint, self._options, model)
        except RepositoryError as e:
            if self._reading == model:
                self._reading = None
                self.form.set_current(None, f"cannot read its config: {e}")
                self._update_buttons()
            return
        if self._reading != model or self.model != model:
            return  # another model chosen meanwhile
        self._reading = None
        self._control_enabled = enabled
        note = (
            f"left on a trial config by an earlier tune ({mark}); Start reloads its files first"
            if mark
            else ""
        )
        self.form.set_current(settings, note)
        if not enabled:
            self._say(control_disabled_message(endpoint.url).capitalize() + ".", error=True)
        self._update_buttons()

    @property
    def reading(self) -> bool:
        """The chosen model's config is being read (Start waits for it)."""
        return self._reading is not None

    @property
    def ready(self) -> bool:
        """The model's config is read and the server lets us load: Start can go."""
        return self._control_enabled is True and self._reading is None

    # -- running ---------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._runner is not None and self._runner.running

    def start(self) -> None:
        if self.running or self._endpoint is None or self.model is None or not self.ready:
            return
        try:
            plan = self.form.plan()
        except ValueError as e:
            self._say(str(e), error=True)
            return
        self.trials, self.tune_result, self.last_progress = [], None, None
        self.plot.set_data([], [])
        self.table.set_trials([])
        self.notes.setText("")
        self.notes.hide()
        self.summary.setText("")
        self._say("")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("reading the images and the model's config…")
        wrap = self._bridge.wrap
        model = self.model
        # The viewer's session as it was opened, on its first server, for this model and its profile.
        spec = dataclasses.replace(
            self._spec, endpoints=(self._endpoint,), model=model, profile=self._profile_for(model)
        )
        target = TuneTarget(spec, self._paths, self._metrics_url)
        reports = TuneReports(
            planned=wrap(self._on_planned),
            progress=wrap(self._on_progress),
            trial=wrap(self._on_trial),
            note=wrap(self._on_note),
            finished=wrap(self._on_finished),
        )
        self._runner = TuneRunner(target, plan, reports).start(self._executor)
        self._update_buttons()

    def cancel(self) -> None:
        runner = self._runner
        if runner is not None and runner.running:
            runner.cancel()
            self.progress.setFormat("cancelling: the original config is being restored…")
        self.cancel_button.setEnabled(False)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing the window stops a tune (its worker restores the original config)."""
        self._closing()
        super().closeEvent(event)

    def reject(self) -> None:
        """Escape hides a dialog without a close event: it stops a tune all the same."""
        self._closing()
        super().reject()

    def _closing(self) -> None:
        self.cancel()
        self.outputs.close_question()

    async def shutdown(self) -> None:
        """The viewer closes: cancel, and wait (bounded, the GUI thread's loop going on) for the restore."""
        self.close()
        runner = self._runner
        if runner is not None:
            await runner.wait(RESTORE_WAIT_S)

    # -- reports (GUI thread, through the bridge) ------------------------------------------------
    def _on_planned(self, trials: list[TrialSettings], total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self._say(
            f"{len(trials)} trial(s): " + "; ".join(f"{n}. {s.describe()}" for n, s in enumerate(trials, 1))
        )

    def _on_progress(self, p: TuneProgress) -> None:
        self.last_progress = p
        self.progress.setValue(min(p.done_requests, self.progress.maximum()))
        what = PHASES.get(p.phase, p.step)
        left = "" if p.eta_s is None or p.phase is TunePhase.RESTORING else f" · {format_left(p.eta_s)} left"
        self.progress.setFormat(f"%p% · trial {p.trial}/{p.trials}: {what}{left}")

    def _on_trial(self, trial: TrialResult) -> None:
        self.trials.append(trial)
        front = pareto_front(self.trials)
        self.plot.set_data(self.trials, front)
        self.table.set_trials(self.trials, front)

    def _on_note(self, text: str) -> None:
        self.notes.setText("\n".join(filter(None, [self.notes.text(), text])))
        self.notes.show()

    def _on_finished(self, result: TuneResult | None, message: str) -> None:
        self.tune_result = result
        if result is None:
            self.progress.setFormat(message)
            self._say(message, error=True)
        else:
            self.trials = list(result.trials)
            self.plot.set_data(result.trials, result.pareto, result.recommendation, result.budget_ms)
            self.table.set_trials(result.trials, result.pareto, result.recommendation)
            if not result.interrupted:
                self.progress.setValue(self.progress.maximum())
            state = "cancelled" if result.interrupted else "done"
            restored = "restored" if result.restored else "NOT restored"
            self.progress.setFormat(
                f"{state} in {format_left(result.seconds)}; the original config was {restored}"
            )
            message = self._summary(result)
            self._say("")  # the plan's list of trials: the table says it all now
        self._update_buttons()
        self.finished_tune.emit(message)

    def _summary(self, result: TuneResult) -> str:
        rec = result.recommendation
        if rec is None:
            text = f"No recommendation: {result.recommendation_reason}."
        else:
            lv = rec.level
            text = (
                f"<b>Recommendation:</b> {html.escape(rec.settings.describe())}, {lv.concurrency} in flight: "
                f"{lv.throughput:.1f} req/s, p95 {lv.p95_ms or 0:.1f} ms ({html.escape(rec.reason)})."
            )
            if rec.speedup is not None and rec.original_level is not None:
                o = rec.original_level
                text += (
                    f" <b>{rec.speedup:.2f}x</b> the original config at the same load "
                    f"({o.throughput:.1f} req/s, p95 {o.p95_ms or 0:.1f} ms)."
                )
        if result.interrupted:
            text += " Cancelled: this is from the trials measured so far."
        failed = result.failed_trials
        if failed:
            lines = (f"{html.escape(t.settings.describe())}: {html.escape(t.error or '')}" for t in failed)
            text += "".join(f"<br><span style='color:#c62828'>{line}</span>" for line in lines)
        self.summary.setText(text)
        return self.summary.text()

    # -- Apply and files (the window's result) -----------------------------------------------------
    def ask_apply(self) -> None:
        """The question naming the server and the model; a yes starts `apply()`."""
        result = self.tune_result
        if result is not None and result.recommendation is not None and not self.running:
            self.outputs.ask_apply(result, lambda: self._tasks.spawn(self.apply(), name="tune: apply"))

    @property
    def confirmation(self) -> QMessageBox | None:
        """The Apply question while it is open."""
        return self.outputs.confirmation

    async def apply(self) -> bool:
        """Load the recommended config on the server (the question was answered yes)."""
        result = self.tune_result
        if result is None:
            return False
        self.apply_button.setEnabled(False)
        try:
            done = await self.outputs.apply(result, self._options)
        finally:
            self._update_buttons()
        if done:
            self.applied.emit(result.model)
        return done

    def _export(self, kind: str) -> None:
        path = self.outputs.ask_path(kind, self.model or "model")
        save = {"config": self.save_config, "csv": self.save_csv, "png": self.save_png}[kind]
        if path:
            self._tasks.spawn(save(path), name=f"tune: save {kind}")

    async def save_config(self, path: str) -> bool:
        return self.tune_result is not None and await self.outputs.save_config(self.tune_result, path)

    async def save_csv(self, path: str) -> bool:
        return self.tune_result is not None and await self.outputs.save_csv(self.tune_result, path)

    async def save_png(self, path: str) -> bool:
        return await self.outputs.save_png(self.plot, path)

    # -- helpers ---------------------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _say(self, text: str, error: bool = False) -> None:
        """The line under the summary: what the last action did (red when it failed)."""
        self.last_error = text if error else None
        self.message.setText(text)
        self.message.setStyleSheet("color: #c62828" if error else "")

    def _update_buttons(self) -> None:
        running = self.running
        result = self.tune_result
        self.form.set_enabled(not running)
        if running:
            start_why: str | None = "A tune is running"
        elif self._endpoint is None:
            start_why = "Connect to a server first"
        elif self._reading is not None:
            start_why = "Reading the model's config…"
        elif self._control_enabled is False:
            start_why = "The server does not allow loading models (its model control mode)"
        elif self._control_enabled is None:
            start_why = "The model's config could not be read"
        else:
            start_why = None
        self.start_button.setEnabled(start_why is None)
        self.start_button.setToolTip(start_why or "Try every combination of the lists on your images")
        self.cancel_button.setEnabled(running)
        has_rec = result is not None and result.recommendation is not None
        if running:
            apply_why: str | None = "A tune is running"
        elif not has_rec:
            apply_why = "No recommendation yet"
        elif result is not None and result.interrupted:
            apply_why = "The tune was cancelled: its recommendation is from part of the trials"
        else:
            apply_why = None
        for button, tip in (
            (self.apply_button, "Load the recommended config on the server (asks first)"),
            (self.save_button, "Write the recommended config as a config.pbtxt file"),
        ):
            button.setEnabled(apply_why is None)
            button.setToolTip(apply_why or tip)
        for button in (self.csv_button, self.png_button):
            button.setEnabled(not running and result is not None and bool(result.trials))
