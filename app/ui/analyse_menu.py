"""The Analyse menu: "Compare with…" (the A/B compare window), "Track objects" (track ids
and trails in the live preview, with a Tracks dock) and "Evaluate against labels…" (its action
only: the viewer wires it to app/ui/evaluation); and the load ramp's window (Tools > Load
test…). Built beside the main window's own menus so the viewer only creates it and tells it the
current session."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import Executor

import shiboken6
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMainWindow

from app.inference.core.session import TritonSession
from app.inference.core.spec import ProfileSource
from app.ui.analysis.load_ramp_window import LoadRampWindow
from app.ui.base.bridge import GuiBridge
from app.ui.base.scrolling import scrolling
from app.ui.base.tasks import TaskSet
from app.ui.compare.compare_controller import CompareController
from app.ui.compare.compare_window import CompareChoice, CompareDialog
from app.ui.live.live_controller import LiveController
from app.ui.live.live_tracking import LiveTracking
from app.ui.live.tracks_panel import TracksPanel
from app.ui.view.image_view import ImageView


class AnalysisUi:
    def __init__(
        self,
        window: QMainWindow,
        view: ImageView,
        live: LiveController,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
        profile_for: Callable[[str | None], ProfileSource],
        compare_errors: tuple[Callable[[str, bool], None], Callable[[], None]] | None = None,
        batch_paths: Callable[[], list[str]] = list,
    ) -> None:
        """`profile_for(model)`: the profile the viewer opens a model with (the compare's sides
        use it); `compare_errors`: (report, clear) for the compare window's own errors;
        `batch_paths()`: what the batch shown was opened from (the compare runs it at once)."""
        self._batch_paths = batch_paths
        self.window, self._tasks, self._report = window, tasks, report
        self._bridge, self._executor = bridge, executor
        self.session: TritonSession | None = None
        self.load_test: LoadRampWindow | None = None  # Tools > Load test…, once opened
        self.profile_for = profile_for
        self.menu = menu = window.menuBar().addMenu("&Analyse")
        self.compare_action = QAction("&Compare with…", window)
        self.compare_action.setShortcut("Ctrl+Shift+C")
        self.compare_action.setEnabled(False)  # once connected
        self.track_action = QAction("&Track objects (live preview)", window)
        self.track_action.setCheckable(True)
        # The viewer starts the evaluation (it becomes the batch): app/ui/evaluation.
        self.evaluate_action = QAction("&Evaluate against labels…", window)
        self.evaluate_action.setToolTip("COCO mAP, precision and recall against a labelled dataset")
        self.evaluate_action.setEnabled(False)  # once connected
        menu.addAction(self.compare_action)
        menu.addAction(self.track_action)
        menu.addAction(self.evaluate_action)
        self.tracks_panel = TracksPanel()
        self.tracks_dock = QDockWidget("Tracks", window)
        self.tracks_dock.setObjectName("TracksDock")
        self.tracks_dock.setWidget(scrolling(self.tracks_panel))  # the window places it (a side tab)
        self.tracking = LiveTracking(live, view, self.tracks_panel, executor)
        compare_report, compare_clear = compare_errors or (report, lambda: None)
        self.compare = CompareController(executor, tasks, bridge, compare_report, compare_clear)
        self.dialog: CompareDialog | None = None
        self.compare_action.triggered.connect(self.ask_compare)
        self.track_action.toggled.connect(self.set_tracking)

    def set_session(self, session: TritonSession | None) -> None:
        self.session = session
        self.compare_action.setEnabled(session is not None)
        self.evaluate_action.setEnabled(session is not None)

    def set_tracking(self, on: bool) -> None:
        self.tracking.set_enabled(on)
        self.tracks_dock.setVisible(on)
        if on:
            self.tracks_dock.raise_()  # the front tab of the side column
        if self.track_action.isChecked() != on:
            self.track_action.setChecked(on)

    def restore_docks(self) -> None:
        """After View > Reset layout: the Tracks dock shows only while tracking is on."""
        self.tracks_dock.setFloating(False)
        self.tracks_dock.setVisible(self.tracking.enabled)

    def ask_compare(self) -> None:
        session = self.session
        if session is None or session.info is None:
            self._report("connect to a server first", True)
            return
        models = sorted({m.name for m in session.models if m.ready})
        self.dialog = dialog = CompareDialog(models, session.info.name, self.window)
        dialog.accepted.connect(lambda: self._tasks.spawn(self.start_compare(dialog.choice(), session)))
        dialog.finished.connect(lambda _r: self._dialog_closed(dialog))
        dialog.open()  # window-modal, without a nested event loop

    def _dialog_closed(self, dialog: CompareDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None  # deleted below: never closed again at shutdown
        dialog.deleteLater()

    async def start_compare(self, choice: CompareChoice, session: TritonSession | None = None) -> bool:
        """A and B opened as the current session is (transport, client batching, TLS, limits)
        with each model's own profile; then the compare window. False when not possible."""
        session = session or self.session
        if session is None:
            self._report("connect to a server first", True)
            return False
        started = await self.compare.start(choice, session.spec, self.profile_for)
        paths = self._batch_paths()
        if started and paths:  # the batch in view, not an empty window ("0 input(s)")
            self.compare.open_paths(paths)
        return started

    def open_load_test(self, paths: list[str]) -> None:
        """Tools > Load test…: the sweep on `paths` (the batch's images that ran; none: the
        sample) with the current session's settings, in its own window."""
        session = self.session
        if session is None:
            self._report("Load test: connect to a server first", True)
            return
        if self.load_test is None:
            self.load_test = LoadRampWindow(self.window, self._bridge, self._executor)
        model = session.info.name if session.info else session.spec.model
        self.load_test.prepare(dataclasses.replace(session.spec, model=model), paths)
        self.load_test.show()
        self.load_test.raise_()

    async def shutdown(self) -> None:
        """The compare dialog closes, the compare's runs and sessions and a load ramp in
        progress stop."""
        dialog, self.dialog = self.dialog, None
        if dialog is not None and shiboken6.isValid(dialog):
            dialog.close()
        await self.compare.shutdown()
        if self.load_test is not None:
            await self.load_test.shutdown()
