"""MainWindow: the widgets laid out, the menus, drag-and-drop. No logic beyond that:
the Viewer (app/ui/viewer.py) wires the widgets to the session and the batch runner."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QGroupBox,
    QLabel,
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.ui.banner import ErrorBanner
from app.ui.batch_panel import BatchPanel
from app.ui.image_view import ImageView
from app.ui.live_plot import LivePlot
from app.ui.request_log import RequestLog
from app.ui.server_panel import ServerPanel
from app.ui.stats_panel import StatsPanel
from app.ui.thresholds import ThresholdsWidget
from app.ui.thumbnail_strip import ThumbnailStrip

SERVER_THRESHOLD_NOTE = (
    "\n\nSome models filter on the server too (the bundled face detector keeps only scores "
    "≥ 0.5): lowering the slider below the server's own threshold cannot show more boxes."
)


def local_paths(event: QDragEnterEvent | QDropEvent) -> list[str]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()]


def _group(title: str, *widgets: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    for w in widgets:
        layout.addWidget(w)
    return box


class MainWindow(QMainWindow):
    """Emits `paths_opened(paths)` (drop or File > Open) and `close_requested()`; the window
    closes for real only once `allow_close()` was called (after the clean-up)."""

    paths_opened = Signal(list)
    close_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Triton Inference Viewer")
        self.setAcceptDrops(True)
        self.setObjectName("MainWindow")
        self._closing_allowed = False

        self.banner = ErrorBanner()
        self.view = ImageView()
        self.hint = QLabel("Drop images or folders here, or use File > Open")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.strip = ThumbnailStrip()
        self.batch_panel = BatchPanel()
        self.server_panel = ServerPanel()
        self.thresholds = ThresholdsWidget(0.5, 0.3)
        for slider in (self.thresholds.score_slider(), self.thresholds.iou_slider()):
            slider.setToolTip(slider.toolTip() + SERVER_THRESHOLD_NOTE)
        self.stats_panel = StatsPanel()
        self.live_plot = LivePlot()
        self.request_log = RequestLog()

        self.setCentralWidget(self._central())
        self._add_dock(
            "Server and model", "ServerDock", self.server_panel, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self._add_dock(
            "Detections and statistics",
            "StatsDock",
            self._stats_column(),
            Qt.DockWidgetArea.RightDockWidgetArea,
        )
        log_dock = self._add_dock(
            "Request log", "LogDock", self.request_log, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.resizeDocks([log_dock], [170], Qt.Orientation.Vertical)
        self._build_menus()
        self.statusBar().showMessage("Ready")

    def sizeHint(self) -> QSize:
        return QSize(1400, 900)

    # -- layout -------------------------------------------------------------------------
    def _central(self) -> QWidget:
        images = QWidget()
        layout = QVBoxLayout(images)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.banner)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.hint)
        layout.addWidget(self.strip)
        layout.addWidget(self.batch_panel)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(images)
        return splitter

    def _stats_column(self) -> QWidget:
        column = QWidget()
        layout = QVBoxLayout(column)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(_group("Thresholds (re-filter received boxes)", self.thresholds))
        layout.addWidget(_group("Requests", self.stats_panel))
        layout.addWidget(_group("Latency p50 (ms) and requests/s, last minute", self.live_plot), 1)
        return column

    def _add_dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)  # saveState() needs names
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(area, dock)
        return dock

    def _build_menus(self) -> None:
        self.file_menu = file_menu = self.menuBar().addMenu("&File")
        self.open_files_action = self._action(file_menu, "&Open files…", QKeySequence.StandardKey.Open)
        self.open_folder_action = self._action(file_menu, "Open &folder…", "Ctrl+Shift+O")
        file_menu.addSeparator()
        self.export_png_action = self._action(file_menu, "Export annotated image (PNG)…", "Ctrl+E")
        self.export_jsonl_action = self._action(file_menu, "Export detections of this image (JSON Lines)…")
        self.export_jsonl_all_action = self._action(
            file_menu, "Export detections of all images (JSON Lines)…"
        )
        self.export_coco_action = self._action(file_menu, "Export COCO results of this image…")
        self.export_coco_all_action = self._action(file_menu, "Export COCO results of all images…")
        file_menu.addSeparator()
        self.clear_action = self._action(file_menu, "Clear the image list")
        file_menu.addSeparator()
        self.quit_action = self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit)
        self.model_menu = model_menu = self.menuBar().addMenu("&Model")
        self.profile_action = self._action(model_menu, "&Profile…")
        self.profile_action.setToolTip("A TOML profile file describing how to feed the model and read it")
        self.detected_profile_action = self._action(model_menu, "Use the &detected profile")
        view_menu = self.menuBar().addMenu("&View")
        self._action(view_menu, "&Fit to window", "Ctrl+0").triggered.connect(self.view.fit)
        self._action(view_menu, "&Actual size (1:1)", "Ctrl+1").triggered.connect(self.view.actual_size)
        self._action(view_menu, "Zoom &in", QKeySequence.StandardKey.ZoomIn).triggered.connect(
            lambda: self.view.zoom_by(1.25)
        )
        self._action(view_menu, "Zoom &out", QKeySequence.StandardKey.ZoomOut).triggered.connect(
            lambda: self.view.zoom_by(0.8)
        )
        self.open_files_action.triggered.connect(self._open_files)
        self.open_folder_action.triggered.connect(self._open_folder)
        self.quit_action.triggered.connect(self.close)

    def _action(self, menu: object, text: str, shortcut: object = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))  # type: ignore[call-overload]
        menu.addAction(action)  # type: ignore[attr-defined]
        return action

    # -- opening ---------------------------------------------------------------------------
    def _open_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self,
            "Open images",
            "",
            "Images (*.jpg *.jpeg *.png *.bmp *.tif *.tiff *.webp);;All files (*)",
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if paths:
            self.paths_opened.emit(paths)

    def _open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Open a folder of images", "", QFileDialog.Option.DontUseNativeDialog
        )
        if folder:
            self.paths_opened.emit([folder])

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragEnterEvent) -> None:  # type: ignore[override]
        if local_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event)
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        self.paths_opened.emit(paths)

    # -- closing -----------------------------------------------------------------------------
    def allow_close(self) -> None:
        self._closing_allowed = True

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closing_allowed:
            event.accept()
            return
        # Hide at once (the user sees the window go), clean up asynchronously, then close.
        event.ignore()
        self.hide()
        self.close_requested.emit()

    def show_hint(self, visible: bool) -> None:
        self.hint.setVisible(visible)
