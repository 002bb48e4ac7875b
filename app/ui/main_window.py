"""MainWindow: the widgets laid out, the menus, drag-and-drop. No logic beyond that:
the Viewer (app/ui/viewer.py) wires the widgets to the session and the batch runner.

Layout (fits 1280x720 and shrinks to 1024x640, frame included): the picture in the middle
(or the first-screen call to action) over the whole height but for the batch's bar and
thumbnails under it; one column of docks on the right: the server on top, then the
detections, the statistics, where the time goes and the request log as tabs (the picture
gets at least half of the window's height); a one-line summary of the statistics in the
status bar. Each dock is closable, floatable and restored from View; the whole arrangement
is remembered.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QChildEvent, QEvent, QSize, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDragLeaveEvent,
    QDropEvent,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QGroupBox,
    QMainWindow,
    QMenu,
    QStackedWidget,
    QTabBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.pipeline.exports.formats import ExportFormat
from app.ui.analysis.request_log import RequestLog
from app.ui.analysis.stats_panel import StatsPanel
from app.ui.analysis.time_split import TimeSplitWidget
from app.ui.base.scrolling import scrolling
from app.ui.base.window_fit import fit_window, keep_on_screen
from app.ui.batch.batch_bar import BatchBar
from app.ui.batch.batch_panel import BatchPanel
from app.ui.batch.classes_panel import ClassesPanel
from app.ui.batch.detections_panel import DetectionsPanel
from app.ui.batch.thumbnail_strip import ThumbnailStrip
from app.ui.server.server_panel import ServerPanel
from app.ui.state.viewer_state import Mode
from app.ui.view.image_view import ImageView
from app.ui.widgets.banner import ErrorBanner
from app.ui.widgets.empty_state import EmptyState
from app.ui.widgets.live_plot import LivePlot
from app.ui.widgets.overlays import DropHighlight, ViewNote, local_paths
from app.ui.widgets.thresholds import ThresholdsWidget

SERVER_THRESHOLD_NOTE = (
    "\n\nSome models filter on the server too (the bundled face detector keeps only scores "
    "≥ 0.5): lowering the slider below the server's own threshold cannot show more boxes."
)
# saveState()/restoreState() version: a layout saved by an older window is ignored, not misapplied.
LAYOUT_VERSION = 3
DEFAULT_SIZE = QSize(1280, 760)  # or the screen's free area less the frame, when smaller
SIDE_WIDTH = 380
SERVER_HEIGHT = 260  # the server dock over the side column's tabs: its content once connected
IMAGE_FILTER = "Images (*.jpg *.jpeg *.png *.bmp *.tif *.tiff *.webp);;All files (*)"


def _group(title: str, *widgets: QWidget, stretch_last: bool = False) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    for i, w in enumerate(widgets):
        layout.addWidget(w, 1 if stretch_last and i == len(widgets) - 1 else 0)
    return box


ADD_MODIFIER = Qt.KeyboardModifier.ShiftModifier  # held while dropping: add to the list


class MainWindow(QMainWindow):
    """Emits `paths_opened(paths)` (a new list: drop or File > Open), `paths_added(paths)` (File >
    Add to the list, or a drop with Shift held), `sample_requested()` and `close_requested()`; the
    window closes for real only once `allow_close()` was called."""

    paths_opened = Signal(list)
    paths_added = Signal(list)
    sample_requested = Signal()
    close_requested = Signal()
    layout_reset = Signal()  # View > Reset layout: docks of other parts follow their own state

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Triton Inference Viewer")
        self.setAcceptDrops(True)
        self.setObjectName("MainWindow")
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks
            | QMainWindow.DockOption.AllowTabbedDocks
            | QMainWindow.DockOption.AllowNestedDocks
        )
        self._closing_allowed = False
        self.mode = Mode.EMPTY
        self.open_dir = ""  # where the open dialogs start (the viewer keeps it remembered)

        self.banner = ErrorBanner()
        self.view = ImageView()
        self.empty_state = EmptyState()
        self.batch_bar = BatchBar()
        self.strip = ThumbnailStrip()
        self.batch_panel = BatchPanel()
        self.server_panel = ServerPanel()
        self.thresholds = ThresholdsWidget(0.5, 0.3)
        for slider in (self.thresholds.score_slider(), self.thresholds.iou_slider()):
            slider.setToolTip(slider.toolTip() + SERVER_THRESHOLD_NOTE)
        self.detections_panel = DetectionsPanel(self.view)
        self.classes_panel = ClassesPanel()
        # Display settings: the view follows the opacity slider and feeds the classes table.
        self.view.set_mask_opacity(self.thresholds.mask_opacity())
        self.thresholds.opacity_changed.connect(self.view.set_mask_opacity)
        self.view.classes_changed.connect(self.classes_panel.set_classes)
        self.stats_panel = StatsPanel()
        self.live_plot = LivePlot()
        self.live_plot.setMinimumHeight(110)
        self.time_split = TimeSplitWidget()
        self.request_log = RequestLog()

        self.setCentralWidget(self._central())
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        right = Qt.DockWidgetArea.RightDockWidgetArea
        # Scrolled only when other docks are stacked under it on a small screen (its default
        # height shows its rows whole): the window still shrinks to 1024x640.
        self.server_dock = self._add_dock("Server and model", "ServerDock", self.server_panel, right)
        detections = QWidget()
        column = QVBoxLayout(detections)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(_group("Thresholds (re-filter received boxes)", self.thresholds))
        column.addWidget(self.classes_panel)
        column.addWidget(_group("On the picture", self.detections_panel, stretch_last=True), 1)
        self.detections_dock = self._add_dock("Detections", "DetectionsDock", detections, right)
        stats = QWidget()
        column = QVBoxLayout(stats)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.stats_panel)
        column.addWidget(
            _group("Latency p50 and requests/s, last minute", self.live_plot, stretch_last=True), 1
        )
        self.stats_dock = self._add_dock("Statistics", "StatsDock", stats, right)
        # A short title: the side column's tabs show it whole.
        self.time_dock = self._add_dock("Time split", "TimeSplitDock", self.time_split, right)
        self.time_dock.setToolTip(
            "Where the time goes: the mean request over the last 10 s, client and server"
        )
        self.log_dock = self._add_dock("Request log", "LogDock", self.request_log, right)
        # One column of tabs under the server: the picture keeps the window's whole height.
        self.tabifyDockWidget(self.detections_dock, self.stats_dock)
        self.tabifyDockWidget(self.stats_dock, self.time_dock)
        self.tabifyDockWidget(self.time_dock, self.log_dock)
        self.stats_dock.raise_()
        # The statistics in one line, always in sight (a click shows the whole panel).
        self.stats_line = QToolButton()
        self.stats_line.setAutoRaise(True)
        self.stats_line.setToolTip("The statistics shown in the Statistics panel, in short: click to open it")
        self.stats_line.clicked.connect(lambda: self.show_dock(self.stats_dock))
        self.statusBar().addPermanentWidget(self.stats_line)
        self.drop_highlight = DropHighlight(self)
        self.view_note = ViewNote(self.view)  # e.g. what the inputs opened wait for
        self._build_menus()
        self._default_sizes()
        self._default_state = self.saveState(LAYOUT_VERSION)
        keep_on_screen(self)  # the main window: fits the screen, frame included, when shown
        self.set_mode(Mode.EMPTY)
        self.statusBar().showMessage("Ready")

    def sizeHint(self) -> QSize:
        return DEFAULT_SIZE

    def childEvent(self, event: QChildEvent) -> None:
        # The docks' tab bars are made by Qt whenever docks are tabbed together: each one shows
        # its titles whole and scrolls with arrows when they do not fit ("Detec… / Se… / T…"
        # with seven tabs in the side column is unreadable).
        if event.type() == QEvent.Type.ChildPolished and isinstance(tabs := event.child(), QTabBar):
            tabs.setElideMode(Qt.TextElideMode.ElideNone)
            tabs.setUsesScrollButtons(True)
        super().childEvent(event)

    def fit_to_screen(self) -> None:
        """The default size, or the screen's free area less the frame when that is smaller
        (laptops); fitted again once the window manager's frame is known (keep_on_screen)."""
        self.resize(DEFAULT_SIZE)
        fit_window(self)

    def show_dock(self, dock: QDockWidget) -> None:
        """A dock shown and brought to the front of its tabs (View's entries only toggle)."""
        dock.show()
        dock.raise_()

    # -- layout -------------------------------------------------------------------------
    def _central(self) -> QWidget:
        self.pages = QStackedWidget()
        self.pages.addWidget(self.empty_state)
        self.pages.addWidget(self.view)
        images = QWidget()
        layout = QVBoxLayout(images)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(2)
        layout.addWidget(self.banner)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.batch_bar)
        layout.addWidget(self.strip)
        layout.addWidget(self.batch_panel)
        return images

    def _add_dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)  # saveState() needs names
        dock.setWidget(scrolling(widget))
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(area, dock)
        return dock

    def default_dock_sizes(self) -> None:
        """The side column and the log at their default sizes (after the window has its size:
        docks sized on a smaller window would leave all the new room to the picture)."""
        self._default_sizes()

    def _default_sizes(self) -> None:
        self.resizeDocks([self.server_dock], [SIDE_WIDTH], Qt.Orientation.Horizontal)
        # Its content's minimum plus the dock's title bar: no scroll bar, the rest for the tabs.
        server = max(
            SERVER_HEIGHT, self.server_panel.minimumSizeHint().height() + 2 * self.fontMetrics().height()
        )
        self.resizeDocks([self.server_dock], [server], Qt.Orientation.Vertical)

    def add_side_dock(self, dock: QDockWidget) -> None:
        """A dock of another part (e.g. Tracks) as one more tab of the side column."""
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.tabifyDockWidget(self.log_dock, dock)

    def docks(self) -> list[QDockWidget]:
        return [self.server_dock, self.detections_dock, self.stats_dock, self.time_dock, self.log_dock]

    def save_layout(self) -> QByteArray:
        return self.saveState(LAYOUT_VERSION)

    def restore_layout(self, state: QByteArray) -> bool:
        """False (and the default layout kept) for a state saved by another layout version."""
        return bool(self.restoreState(state, LAYOUT_VERSION))

    def reset_layout(self) -> None:
        self.restoreState(self._default_state, LAYOUT_VERSION)
        for dock in self.docks():
            dock.setFloating(False)
            dock.show()
        self._default_sizes()
        self.layout_reset.emit()

    def hide_all(self) -> None:
        """The window and its floating docks (top-level windows of their own) go at once."""
        self.hide()
        for dock in self.docks():
            if dock.isFloating():
                dock.hide()

    def set_mode(self, mode: Mode) -> None:
        """What the middle shows: the call to action, a batch (with its bar and thumbnails) or
        live video (the batch's widgets hidden: the picture gets the room)."""
        self.mode = Mode(mode)
        self.pages.setCurrentWidget(self.empty_state if mode is Mode.EMPTY else self.view)
        self.thumbnails_action.setChecked(mode is Mode.BATCH)
        self._show_batch_widgets(mode is Mode.BATCH)
        if mode in (Mode.BATCH, Mode.EMPTY):
            self.detections_dock.raise_()
        elif mode is Mode.LIVE:
            self.stats_dock.raise_()

    def _show_batch_widgets(self, on: bool) -> None:
        for widget in (self.batch_bar, self.strip, self.batch_panel):
            widget.setVisible(on)

    # -- menus ------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        self.file_menu = file_menu = self._menu("&File")
        self.open_files_action = self._action(file_menu, "&Open images…", QKeySequence.StandardKey.Open)
        self.open_folder_action = self._action(file_menu, "Open &folder…", "Ctrl+Shift+O")
        self.open_folder_action.setToolTip("A new list: the images opened before are put away")
        self.add_files_action = self._action(file_menu, "A&dd images to the list…")
        self.add_folder_action = self._action(file_menu, "Add a folder to the &list…")
        for action in (self.add_files_action, self.add_folder_action):
            action.setToolTip("Keep the images opened and add these (or hold Shift while dropping)")
        self.sample_action = self._action(file_menu, "Try the &sample")
        self.sample_action.setToolTip("Run the bundled photograph through the model")
        file_menu.addSeparator()
        self.export_menu = export = file_menu.addMenu("&Export")
        export.setToolTipsVisible(True)
        self.export_png_action = self._action(export, "Annotated image (PNG)…", "Ctrl+E")
        self.export_jsonl_action = self._action(export, "Detections of this image (JSON Lines)…")
        export.addSeparator()
        self.export_all_actions: dict[ExportFormat, QAction] = {}
        for fmt, text in (
            (ExportFormat.JSONL, "All images: JSON Lines…"),
            (ExportFormat.COCO, "All images: COCO JSON…"),
            (ExportFormat.YOLO, "All images: YOLO labels (folder)…"),
            (ExportFormat.VOC, "All images: Pascal VOC XML (folder)…"),
            (ExportFormat.LABELME, "All images: labelme JSON (folder)…"),
            (ExportFormat.DOTA, "All images: DOTA oriented boxes (folder)…"),
            (ExportFormat.CROPS, "All images: object crops (folder)…"),
        ):
            self.export_all_actions[fmt] = self._action(export, text)
        export.addSeparator()
        self.export_stats_action = self._action(export, "Statistics (CSV)…")
        self.export_log_action = self._action(export, "Request log (CSV)…")
        file_menu.addSeparator()
        self.clear_action = self._action(file_menu, "Clear the image list")
        file_menu.addSeparator()
        self.quit_action = self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit)

        self.model_menu = model_menu = self._menu("&Model")
        self.open_model_file_action = self._action(model_menu, "Open model &file…")
        self.open_model_file_action.setToolTip(
            "An .onnx or .tflite file, loaded on the server as a model named after the file "
            "(dropping the file on the window does the same)"
        )
        self.profile_action = self._action(model_menu, "&Profile…")
        self.profile_action.setToolTip("A TOML profile file describing how to feed the model and read it")
        self.detected_profile_action = self._action(model_menu, "Use the &detected profile")

        self.view_menu = view_menu = self._menu("&View")
        self.fit_action = self._action(view_menu, "&Fit to window", "Ctrl+0", "F")
        self.fit_action.triggered.connect(self.view.fit)
        self._action(view_menu, "&Actual size (1:1)", "Ctrl+1").triggered.connect(self.view.actual_size)
        self._action(view_menu, "Zoom &in", QKeySequence.StandardKey.ZoomIn).triggered.connect(
            lambda: self.view.zoom_by(1.25)
        )
        self._action(view_menu, "Zoom &out", QKeySequence.StandardKey.ZoomOut).triggered.connect(
            lambda: self.view.zoom_by(0.8)
        )
        view_menu.addSeparator()
        self.next_action = self._action(view_menu, "&Next image", "Right", "D")
        self.prev_action = self._action(view_menu, "&Previous image", "Left", "A")
        self.first_action = self._action(view_menu, "First image", "Home")
        self.last_action = self._action(view_menu, "Last image", "End")
        view_menu.addSeparator()
        for dock in self.docks():
            view_menu.addAction(dock.toggleViewAction())
        self.thumbnails_action = self._action(view_menu, "Batch bar and thumbnails")
        self.thumbnails_action.setCheckable(True)
        self.thumbnails_action.toggled.connect(self._show_batch_widgets)
        self.view_menu_toolbar_anchor = view_menu.addSeparator()
        self._action(view_menu, "&Reset layout").triggered.connect(self.reset_layout)

        self.tools_menu = tools_menu = self._menu("&Tools")
        self.load_test_action = self._action(tools_menu, "&Load test…", "Ctrl+L")
        self.load_test_action.setToolTip(
            "Raise the requests in flight step by step and find where throughput stops growing"
        )

        self.open_files_action.triggered.connect(lambda: self.open_files())
        self.open_folder_action.triggered.connect(lambda: self.open_folder())
        self.add_files_action.triggered.connect(lambda: self.open_files(add=True))
        self.add_folder_action.triggered.connect(lambda: self.open_folder(add=True))
        self.sample_action.triggered.connect(self.sample_requested)
        self.quit_action.triggered.connect(self.close)
        self.empty_state.open_images.connect(self.open_files)
        self.empty_state.open_folder.connect(self.open_folder)
        self.empty_state.try_sample.connect(self.sample_requested)

    def _menu(self, title: str) -> QMenu:
        menu = self.menuBar().addMenu(title)
        menu.setToolTipsVisible(True)  # disabled actions say why in their tooltip
        return menu

    def _action(self, menu: QMenu, text: str, *shortcuts: object) -> QAction:
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])  # type: ignore[call-overload]
        menu.addAction(action)
        return action

    # -- opening ---------------------------------------------------------------------------
    def open_files(self, add: bool = False) -> None:
        title = "Add images to the list" if add else "Open images"
        paths, _ = QFileDialog.getOpenFileNames(
            self, title, self.open_dir, IMAGE_FILTER, options=QFileDialog.Option.DontUseNativeDialog
        )
        if paths:
            (self.paths_added if add else self.paths_opened).emit(paths)

    def open_folder(self, add: bool = False) -> None:
        title = "Add a folder of images to the list" if add else "Open a folder of images"
        folder = QFileDialog.getExistingDirectory(
            self, title, self.open_dir, QFileDialog.Option.DontUseNativeDialog
        )
        if folder:
            (self.paths_added if add else self.paths_opened).emit([folder])

    def _drop_text(self, count: int, add: bool) -> str:
        noun = "item" if count == 1 else "items"
        if add:
            return f"Drop to add {count} {noun} to the list"
        return f"Drop to open {count} {noun} (hold Shift to add them to the list)"

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        paths = local_paths(event)
        if paths:
            event.acceptProposedAction()
            add = bool(event.modifiers() & ADD_MODIFIER)
            self.drop_highlight.set_text(self._drop_text(len(paths), add))
            self.drop_highlight.reposition()
            self.drop_highlight.show()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragEnterEvent) -> None:  # type: ignore[override]
        paths = local_paths(event)
        if paths:
            event.acceptProposedAction()
            # Shift pressed or released while dragging: the highlight says what the drop does.
            self.drop_highlight.set_text(self._drop_text(len(paths), bool(event.modifiers() & ADD_MODIFIER)))

    def dragLeaveEvent(self, event: QDragLeaveEvent) -> None:
        self.drop_highlight.hide()
        super().dragLeaveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        self.drop_highlight.hide()
        paths = local_paths(event)
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        add = bool(event.modifiers() & ADD_MODIFIER)
        (self.paths_added if add else self.paths_opened).emit(paths)

    # -- closing -----------------------------------------------------------------------------
    def allow_close(self) -> None:
        self._closing_allowed = True

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closing_allowed:
            event.accept()
            return
        # Hide at once (the user sees the window go), clean up asynchronously, then close.
        event.ignore()
        self.close_requested.emit()
