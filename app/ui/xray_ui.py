"""The request X-ray's place in the window: the "Request X-ray" dock under the picture (the
X-ray view of the request selected in the Request log, or of the newest traced live frame),
Analyse > Trace requests (off, the next 10, the next 100, all), the export dialogs, and the
viewer's own stages of traced requests (GuiStages: the hand-over to the GUI thread and the
live view's paint). The viewer builds it and tells it the session; the rest is wired here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMenu

from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult
from app.pipeline.xray import XRay
from app.ui.analysis.gui_stages import GuiStages
from app.ui.analysis.xray_controller import TraceMode, XRayController
from app.ui.analysis.xray_view import XRayView
from app.ui.base.bridge import GuiBridge
from app.ui.batch.batch_runner import BatchRunner
from app.ui.live.live_controller import LiveController
from app.ui.main_window import MainWindow

DOCK_HEIGHT = 300
NEXT_CHOICES = (10, 100)
JSON_FILTER = "JSON (*.json);;All files (*)"


class XRayUi:
    def __init__(
        self,
        window: MainWindow,
        analyse_menu: QMenu,
        live: LiveController,
        runner: BatchRunner,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
    ) -> None:
        self.window = window
        self.xray = XRay()
        self.view = XRayView()
        self.dock = QDockWidget("Request X-ray", window)
        self.dock.setObjectName("XRayDock")  # saveState() needs names
        self.dock.setWidget(self.view)
        self.dock.setToolTip("One request's whole life, client and server, from Triton's own traces")
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()  # until tracing is turned on, a log row is double-clicked, or View
        window.view_menu.insertAction(window.view_menu_toolbar_anchor, self.dock.toggleViewAction())
        self.controller = XRayController(
            self.view,
            self.xray,
            ask_path=self._ask_tensors_path,
            ask_chrome_path=self._ask_chrome_path,
            report=report,
        )
        self._bridge = bridge
        self.stages = GuiStages(self.xray, bridge, on_screen=self.controller.live_frame_shown)
        self._live = live
        self._build_menu(analyse_menu)
        # Every result's slot runs inside the bridge's delivery: its hand-over ends here.
        runner.result.connect(lambda _job, result: self.stages.arrived(result))
        live.result.connect(self.stages.arrived)
        live.painted.connect(self._live_drawn)
        window.view.painted.connect(self.stages.viewport_painted)
        window.request_log.selected.connect(lambda rid: self.controller.choose(rid or None))
        window.request_log.table.doubleClicked.connect(lambda _index: self.show_dock())
        self.view.trace_button.clicked.connect(self.show_dock)
        self.controller.mode_changed.connect(self._mode_changed)
        window.layout_reset.connect(self.restore_dock)

    def _build_menu(self, analyse_menu: QMenu) -> None:
        analyse_menu.addSeparator()
        self.menu = menu = analyse_menu.addMenu("T&race requests")
        menu.setToolTipsVisible(True)
        group = QActionGroup(menu)
        # One mode at a time, or none checked (the view's own "Trace the next N" of another N).
        group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)
        self.mode_actions: dict[str, QAction] = {}

        def add(key: str, text: str, tip: str, then: Callable[[], None]) -> None:
            action = QAction(text, menu)
            action.setCheckable(True)
            action.setToolTip(tip)
            action.triggered.connect(then)
            group.addAction(action)
            menu.addAction(action)
            self.mode_actions[key] = action

        add("off", "&Off", "No request is traced (untraced requests pay nothing)", self.controller.trace_off)
        for n in NEXT_CHOICES:
            add(
                f"next {n}",
                f"The &next {n} requests",
                f"Trace the next {n} requests (live video: the next {n} frames sent), then stop",
                lambda n=n: self.trace_next(n),  # type: ignore[misc]
            )
        add("all", "&All requests", "Trace every request until turned off", self.trace_all)
        self.mode_actions["off"].setChecked(True)

    # -- what is traced ---------------------------------------------------------------------
    def trace_next(self, n: int) -> None:
        self.controller.trace_next(n)
        self.mode_actions.get(f"next {n}", self.mode_actions["off"]).setChecked(True)
        self.show_dock()

    def trace_all(self) -> None:
        self.controller.trace_all(True)
        self.show_dock()

    def _mode_changed(self, mode: str) -> None:
        if mode != TraceMode.OFF.value:
            # Results carry their posting time from now on (the hand-over stage); kept on
            # after "off" for this session: the last traced requests may still be on their way.
            self._bridge.timed = True
        if mode == TraceMode.OFF.value:
            self.mode_actions["off"].setChecked(True)
        elif mode == TraceMode.ALL.value:
            self.mode_actions["all"].setChecked(True)
        elif not any(self.mode_actions[f"next {n}"].isChecked() for n in NEXT_CHOICES):
            # The view's own "Trace the next N": no menu entry of that N; none checked.
            for action in self.mode_actions.values():
                action.setChecked(False)

    def set_session(self, session: TritonSession | None) -> None:
        self.controller.set_session(session)
        # A new session's results carry their posting time only when it is traced from the start.
        self._bridge.timed = self.controller.mode is not TraceMode.OFF

    # -- the viewer's own stages -----------------------------------------------------------
    def _live_drawn(self, result: InferenceResult) -> None:
        view = self.window.view
        on_screen = view.isVisible() and not view.visibleRegion().isEmpty()
        self.stages.drawn(result, self._live.paint_started_s, on_screen)

    # -- the dock and the dialogs --------------------------------------------------------------
    def show_dock(self) -> None:
        first = not self.dock.isVisible()
        self.dock.show()
        self.dock.raise_()
        if first and not self.dock.isFloating():
            self.window.resizeDocks([self.dock], [DOCK_HEIGHT], Qt.Orientation.Vertical)

    def restore_dock(self) -> None:
        """After View > Reset layout: docked under the picture, shown while tracing is on."""
        self.dock.setFloating(False)
        self.window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.setVisible(self.controller.mode is not TraceMode.OFF)

    def _ask_tensors_path(self, request_id: str) -> str | None:
        return self._ask("Export the request's tensors for perf_analyzer", f"tensors-{request_id}.json")

    def _ask_chrome_path(self, count: int) -> str | None:
        noun = "request" if count == 1 else "requests"
        return self._ask(f"Export {count} traced {noun} as Chrome trace JSON", "trace.json")

    def _ask(self, title: str, name: str) -> str | None:
        start = str(Path(self.window.open_dir or Path.home()) / name)
        path, _ = QFileDialog.getSaveFileName(
            self.window, title, start, JSON_FILTER, options=QFileDialog.Option.DontUseNativeDialog
        )
        return path or None

    def shutdown(self) -> None:
        """Polling stops, the worker lets go (the session's close puts the server's trace
        settings back); a floating dock goes with the window."""
        self.controller.close()
        if self.dock.isFloating():
            self.dock.hide()
