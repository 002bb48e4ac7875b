"""The Request log's X-ray view (widgets only): the selected request's waterfall (WaterfallView)
with where its time went in words (app.inference.tracing.diagnosis), "Trace the next N
requests", "Follow the live picture", the slowest traced requests with their breakdown
(SlowestTable), and the exports: the Chrome trace of this request or of every traced one, and
this request's tensors for perf_analyzer with the command line that replays them. Driven by
`XRayController` (app/ui/analysis/xray_controller.py).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.inference.tracing.diagnosis import diagnose
from app.inference.tracing.spans import RequestTrace
from app.ui.analysis.slowest_table import SlowestTable
from app.ui.analysis.waterfall_view import WaterfallView

SLOWEST_LISTED = 10
NOT_TRACED = "Request {id} was not traced: press “Trace the next requests”, then select one of them."
NOTHING = "Select a request in the log to see its X-ray."


def summary_line(trace: RequestTrace) -> str:
    """One request in short: its time, then its biggest finding."""
    return f"request {trace.request_id}: {trace.duration_ms:.1f} ms: {diagnose(trace)[0].message}"


class XRayView(QWidget):
    trace_next_requested = Signal(int)
    export_requested = Signal(str)  # the request id: its tensors for perf_analyzer
    chrome_requested = Signal(bool)  # True: every traced request; False: the one shown
    request_chosen = Signal(str)  # a request picked in the slowest table

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request_id: str | None = None
        self.trace: RequestTrace | None = None
        self.title = QLabel(NOTHING)
        self.title.setWordWrap(True)
        self.clock = QLabel("")
        self.clock.setWordWrap(True)
        self.waterfall = WaterfallView()
        self.diagnosis = QLabel("")
        self.diagnosis.setWordWrap(True)
        self.diagnosis.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.count = QSpinBox()
        self.count.setRange(1, 1000)
        self.count.setValue(10)
        self.trace_button = QPushButton("Trace the next requests")
        self.armed = QLabel("")
        self.follow = QCheckBox("Follow the live picture")
        self.follow.setToolTip("Show the newest traced frame of the live video once its trace is in")
        self.follow.setChecked(True)
        self.export_button = QPushButton("Tensors for perf_analyzer…")
        self.export_button.setToolTip("This request's exact tensors as perf_analyzer --input-data JSON")
        self.export_button.setEnabled(False)
        self.chrome_button = QToolButton()
        self.chrome_button.setText("Chrome trace…")
        self.chrome_button.setToolTip("Traced requests as Chrome trace-event JSON (for ui.perfetto.dev)")
        self.chrome_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        chrome_menu = QMenu(self.chrome_button)
        self.chrome_one_action = chrome_menu.addAction("This request…")
        self.chrome_all_action = chrome_menu.addAction("Every traced request…")
        self.chrome_button.setMenu(chrome_menu)
        self.chrome_one_action.setEnabled(False)
        self.chrome_all_action.setEnabled(False)
        self.command = QLineEdit()
        self.command.setReadOnly(True)
        self.command.setPlaceholderText("the perf_analyzer command line that replays the exported tensors")
        self.slowest = SlowestTable()
        self.notes = QLabel("")
        self.notes.setWordWrap(True)

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Trace the next"))
        controls.addWidget(self.count)
        controls.addWidget(self.trace_button)
        controls.addWidget(self.armed, 1)
        controls.addWidget(self.follow)
        controls.addWidget(self.chrome_button)
        controls.addWidget(self.export_button)
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.title)
        column.addWidget(self.clock)
        self.waterfall_scroll = scroll = QScrollArea()
        scroll.setWidget(self.waterfall)
        scroll.setWidgetResizable(True)
        column.addWidget(scroll, 1)
        column.addWidget(self.diagnosis)
        right = QWidget()
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(QLabel(f"Slowest traced requests (up to {SLOWEST_LISTED}):"))
        column.addWidget(self.slowest, 1)
        column.addWidget(self.command)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(left)
        self.split.addWidget(right)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(controls)
        layout.addWidget(self.notes)
        layout.addWidget(self.split, 1)

        self.trace_button.clicked.connect(lambda: self.trace_next_requested.emit(self.count.value()))
        self.export_button.clicked.connect(self._export_clicked)
        self.chrome_one_action.triggered.connect(lambda: self.chrome_requested.emit(False))
        self.chrome_all_action.triggered.connect(lambda: self.chrome_requested.emit(True))
        self.slowest.chosen.connect(self.request_chosen)

    def show_request(self, request_id: str | None, trace: RequestTrace | None) -> None:
        """The X-ray of `request_id` (its trace, or a sentence saying it was not traced)."""
        self.request_id, self.trace = request_id, trace
        self.waterfall.set_trace(trace)
        self.export_button.setEnabled(trace is not None and bool(trace.inputs))
        self.chrome_one_action.setEnabled(trace is not None)
        if request_id is None:
            self.title.setText(NOTHING)
            self.clock.setText("")
            self.diagnosis.setText("")
            return
        if trace is None:
            self.title.setText(NOT_TRACED.format(id=request_id))
            self.clock.setText("")
            self.diagnosis.setText("")
            return
        self.title.setText(f"Request {trace.request_id} ({trace.model}): {trace.duration_ms:.1f} ms")
        self.clock.setText("; ".join([trace.clock, *trace.notes]).strip("; "))
        self.diagnosis.setText("\n".join(f"• {d.text()}" for d in diagnose(trace)))

    def set_slowest(self, traces: list[RequestTrace]) -> None:
        self.slowest.set_traces(traces)
        self.chrome_all_action.setEnabled(bool(traces))

    def set_armed(self, left: int) -> None:
        self.armed.setText(f"{left} to trace" if left else "")

    def set_notes(self, notes: list[str]) -> None:
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))

    def set_command(self, text: str) -> None:
        self.command.setText(text)

    def _export_clicked(self) -> None:
        if self.request_id is not None:
            self.export_requested.emit(self.request_id)
