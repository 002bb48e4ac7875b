"""The A/B compare window's widgets: the "Compare with…" dialog, a toolbar (open images,
folder, video; stop; side by side / overlay; IoU), the compare view in the middle and the
compare panel as a dock. No logic: app/ui/compare/compare_controller.py drives it."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QProgressBar,
    QToolBar,
    QWidget,
)

from app.pipeline.matching import DEFAULT_IOU
from app.ui.base.window_fit import secondary_window
from app.ui.compare.compare_panel import ComparePanel
from app.ui.compare.compare_view import CompareView, Layout
from app.ui.widgets.camera_picker import ask_video_file
from app.ui.widgets.overlays import local_paths

DEFAULT_SIZE = QSize(1280, 760)  # smaller on a smaller screen (secondary_window fits it)


@dataclass(frozen=True)
class CompareChoice:
    """What to compare: A and B, each a model, a version ("": the server's) and servers
    ([]: the viewer's current servers)."""

    model_a: str
    version_a: str
    model_b: str
    version_b: str
    urls_b: list[str]


SAME_AS_A = "B is the same as A: choose another model, version or server for B"


class CompareDialog(QDialog):
    """Compare with…: B is another model, another version, or the same model elsewhere."""

    def __init__(self, models: list[str], current: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare with…")
        self.model_a = QComboBox()
        self.model_b = QComboBox()
        for combo in (self.model_a, self.model_b):
            combo.setEditable(True)
            combo.addItems(models)
            combo.setCurrentText(current)
        # B starts as another model (comparing A with itself tells nothing).
        self.model_b.setCurrentText(next((m for m in models if m != current), current))
        self.version_a = QLineEdit()
        self.version_b = QLineEdit()
        for edit in (self.version_a, self.version_b):
            edit.setPlaceholderText("the server's (latest)")
        self.server_b = QLineEdit()
        self.server_b.setPlaceholderText("the same server(s) as A")
        form = QFormLayout(self)
        form.addRow(QLabel("Every image, folder and video frame goes to both, as two request streams."))
        form.addRow("A: model", self.model_a)
        form.addRow("A: version", self.version_a)
        form.addRow("B: model", self.model_b)
        form.addRow("B: version", self.version_b)
        form.addRow("B: server (HOST:PORT, comma-separated)", self.server_b)
        self.same_note = QLabel(SAME_AS_A)
        self.same_note.setStyleSheet("color: #c62828")
        form.addRow(self.same_note)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        for combo in (self.model_a, self.model_b):
            combo.currentTextChanged.connect(self._check)
        for edit in (self.version_a, self.version_b, self.server_b):
            edit.textChanged.connect(self._check)
        self._check()
        secondary_window(self)

    def same_as_a(self) -> bool:
        """B is A: the same model, version and server."""
        c = self.choice()
        return (c.model_b, c.version_b) == (c.model_a, c.version_a) and not c.urls_b

    def _check(self, *_args: object) -> None:
        same = self.same_as_a()
        self.same_note.setVisible(same)
        self.ok_button.setEnabled(not same)

    def accept(self) -> None:
        if not self.same_as_a():  # (Enter with OK disabled still lands here)
            super().accept()

    def choice(self) -> CompareChoice:
        urls = [u.strip() for u in self.server_b.text().split(",") if u.strip()]
        return CompareChoice(
            self.model_a.currentText().strip(),
            self.version_a.text().strip(),
            self.model_b.currentText().strip(),
            self.version_b.text().strip(),
            urls,
        )


class CompareWindow(QMainWindow):
    """Emits what the user asks for; closing it asks the controller to stop (`closed`)."""

    paths_opened = Signal(list)
    video_opened = Signal(str)
    stop_requested = Signal()
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("A/B compare")
        self.setObjectName("CompareWindow")
        self.setAcceptDrops(True)
        self.view = CompareView()
        self.panel = ComparePanel()
        self.setCentralWidget(self.view)
        dock = QDockWidget("Compare", self)
        dock.setObjectName("CompareDock")
        dock.setWidget(self.panel)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.toolbar = bar = QToolBar("Compare")
        bar.setObjectName("CompareToolbar")
        self.addToolBar(bar)
        self.open_files_action = bar.addAction("Open images…")
        self.open_folder_action = bar.addAction("Open folder…")
        self.open_video_action = bar.addAction("Open video…")
        self.stop_action = bar.addAction("Stop")
        bar.addSeparator()
        group = QActionGroup(self)
        self.layout_actions: dict[Layout, QAction] = {}
        for mode in Layout:
            action = bar.addAction(mode.value.capitalize())
            action.setCheckable(True)
            group.addAction(action)
            action.triggered.connect(lambda _c=False, m=mode: self.view.set_layout(m))
            self.layout_actions[mode] = action
        self.layout_actions[Layout.SIDE_BY_SIDE].setChecked(True)
        bar.addSeparator()
        bar.addWidget(QLabel(" Match IoU ≥ "))
        self.iou = QDoubleSpinBox()
        self.iou.setRange(0.05, 1.0)
        self.iou.setSingleStep(0.05)
        self.iou.setDecimals(2)
        self.iou.setValue(DEFAULT_IOU)
        self.iou.setToolTip("Two detections of the same class match when their IoU is at least this")
        bar.addWidget(self.iou)
        self.open_files_action.triggered.connect(self._open_files)
        self.open_folder_action.triggered.connect(self._open_folder)
        self.open_video_action.triggered.connect(self._open_video)
        self.stop_action.triggered.connect(self.stop_requested.emit)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(240)
        self.progress.hide()
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().showMessage("Open images, a folder or a video: each goes to both models")
        self.resize(DEFAULT_SIZE)
        secondary_window(self)  # fits the screen, frame included; Esc / Ctrl+W close it

    def set_layout(self, mode: Layout) -> None:
        self.layout_actions[mode].setChecked(True)
        self.view.set_layout(mode)

    def _open_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Compare on images", "", options=QFileDialog.Option.DontUseNativeDialog
        )
        if paths:
            self.paths_opened.emit(paths)

    def _open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Compare on a folder", "", QFileDialog.Option.DontUseNativeDialog
        )
        if folder:
            self.paths_opened.emit([folder])

    def _open_video(self) -> None:
        path = ask_video_file(self)
        if path:
            self.video_opened.emit(path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if local_paths(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = local_paths(event)
        if paths:
            event.acceptProposedAction()
            self.paths_opened.emit(paths)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.closed.emit()
        super().closeEvent(event)
