"""The evaluation's place in the window: the Evaluation dock (beside Detections), the dialog
that starts a run (from Analyse > Evaluate against labels…, the panel's button, or a dataset
dropped on the panel), the export's folder choice, and each compared model's mAP."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Executor

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMainWindow

from app.inference.core.session import TritonSession
from app.ui.base.bridge import GuiBridge
from app.ui.base.scrolling import scrolling
from app.ui.base.tasks import TaskSet
from app.ui.compare.compare_controller import CompareController
from app.ui.evaluation.compare_accuracy import CompareAccuracy
from app.ui.evaluation.evaluate_dialog import EvaluateDialog, EvaluationChoice
from app.ui.evaluation.evaluation_controller import EvaluationController
from app.ui.evaluation.evaluation_panel import EvaluationPanel
from app.ui.state.viewer_state import ViewerState
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget

DOCK_WIDTH = 430
DOCK_HEIGHT_SHARE = 0.7  # of the window's height, the rest to the docks above it


class EvaluationUi(QObject):
    def __init__(
        self,
        window: QMainWindow,
        beside: QDockWidget,
        state: ViewerState,
        view: ImageView,
        thresholds: ThresholdsWidget,
        compare: CompareController,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
    ) -> None:
        super().__init__()
        self.window, self._tasks, self._report = window, tasks, report
        self.session: TritonSession | None = None
        self.start_dir = ""  # where the dialogs start (the viewer keeps it remembered)
        self.panel = EvaluationPanel()
        self.dock = QDockWidget("Evaluation", window)
        self.dock.setObjectName("EvaluationDock")  # saveState() needs names
        self.dock.setWidget(scrolling(self.panel))
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        window.tabifyDockWidget(beside, self.dock)
        self.dock.hide()
        self.controller = EvaluationController(
            state, view, thresholds, self.panel, executor, tasks, bridge, report
        )
        self.accuracy = CompareAccuracy(self.controller, compare, executor, tasks)
        self.dialog: EvaluateDialog | None = None
        self.panel.evaluate_requested.connect(lambda: self.ask())
        self.panel.dataset_dropped.connect(lambda path: self.ask(EvaluationChoice(path)))
        self.panel.export_requested.connect(self.ask_export)

    def set_session(self, session: TritonSession | None) -> None:
        self.session = session
        self.panel.evaluate_button.setEnabled(session is not None and not self.controller.active())

    def show_panel(self) -> None:
        """The dock in front; docked, it gets room for its figures and the tabs under them."""
        self.dock.show()
        self.dock.raise_()
        if not self.dock.isFloating():
            self.window.resizeDocks([self.dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
            height = round(self.window.height() * DOCK_HEIGHT_SHARE)
            self.window.resizeDocks([self.dock], [height], Qt.Orientation.Vertical)

    def ask(self, choice: EvaluationChoice | None = None) -> None:
        """The dialog (window-modal, no nested event loop), filled with `choice` or the last one."""
        session = self.session
        if session is None or session.info is None:
            self._report("Evaluate: connect to a server first", True)
            return
        self.dialog = dialog = EvaluateDialog(session.info.name, self.start_dir, self.window)
        last = choice or self.controller.choice
        if last is not None:
            dialog.set_choice(last)
        dialog.accepted.connect(lambda: self._tasks.spawn(self.start(dialog.choice()), name="evaluate start"))
        dialog.finished.connect(lambda _r: dialog.deleteLater())
        dialog.open()

    async def start(self, choice: EvaluationChoice) -> bool:
        session = self.session
        if session is None:
            self._report("Evaluate: connect to a server first", True)
            return False
        self.show_panel()
        started = await self.controller.start(choice, session)
        self.show_panel()  # again: the batch taking the view raised the Detections dock
        return started

    def ask_export(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self.window,
            "Export the evaluation report into",
            self.start_dir,
            QFileDialog.Option.DontUseNativeDialog,
        )
        if folder:
            self._tasks.spawn(self.controller.export_to(folder), name="evaluation export")

    async def shutdown(self) -> None:
        if self.dialog is not None:
            with contextlib.suppress(RuntimeError):  # closed by the user: already deleted
                self.dialog.close()
        await self.controller.shutdown()
        if self.dock.isFloating():
            self.dock.hide()
