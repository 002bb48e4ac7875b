"""The Request log's X-ray view: one request's whole life on one timeline, client and server.

`XRayView` (widgets only): the selected request's waterfall (WaterfallView), where its time
went in words (app.inference.tracing.diagnosis), "Trace the next N requests", the slowest
traced requests with their breakdown, and the export of a traced request's tensors for
perf_analyzer with the command line that replays them.

`XRayController` drives it from an `XRay` (app.pipeline.xray): what touches the server or
the disk (arming the tracer, polling the trace files, writing the export) runs on one worker
thread of its own, and its answers come back through a GuiBridge: the GUI thread never waits
on either.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.inference.tracing.diagnosis import breakdown, diagnose
from app.inference.tracing.perf_analyzer import replay_command, write_input_data
from app.inference.tracing.spans import RequestTrace
from app.pipeline.xray import XRay
from app.ui.analysis.waterfall_view import WaterfallView
from app.ui.base.bridge import GuiBridge

POLL_MS = 200
SLOWEST_LISTED = 10
NOT_TRACED = "Request {id} was not traced: press “Trace the next requests”, then select one of them."
NOTHING = "Select a request in the log to see its X-ray."


def summary_line(trace: RequestTrace) -> str:
    """One request in the slowest list: its time, then its biggest finding."""
    return f"request {trace.request_id}: {trace.duration_ms:.1f} ms: {diagnose(trace)[0].message}"


class XRayView(QWidget):
    trace_next_requested = Signal(int)
    export_requested = Signal(str)  # the request id
    request_chosen = Signal(str)  # a request picked in the slowest list

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
        self.count = QSpinBox()
        self.count.setRange(1, 1000)
        self.count.setValue(10)
        self.trace_button = QPushButton("Trace the next requests")
        self.armed = QLabel("")
        self.export_button = QPushButton("Export for perf_analyzer…")
        self.export_button.setEnabled(False)
        self.command = QLineEdit()
        self.command.setReadOnly(True)
        self.command.setPlaceholderText("the perf_analyzer command line that replays the exported tensors")
        self.slowest = QListWidget()
        self.slowest.setMaximumHeight(self.fontMetrics().height() * 7)
        self.notes = QLabel("")
        self.notes.setWordWrap(True)

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Trace the next"))
        controls.addWidget(self.count)
        controls.addWidget(self.trace_button)
        controls.addWidget(self.armed, 1)
        controls.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addWidget(self.notes)
        layout.addWidget(self.title)
        layout.addWidget(self.clock)
        layout.addWidget(self.waterfall)
        layout.addWidget(self.diagnosis)
        layout.addWidget(self.command)
        layout.addWidget(QLabel("Slowest traced requests:"))
        layout.addWidget(self.slowest)

        self.trace_button.clicked.connect(lambda: self.trace_next_requested.emit(self.count.value()))
        self.export_button.clicked.connect(self._export_clicked)
        self.slowest.itemActivated.connect(self._slowest_chosen)
        self.slowest.itemClicked.connect(self._slowest_chosen)

    def show_request(self, request_id: str | None, trace: RequestTrace | None) -> None:
        """The X-ray of `request_id` (its trace, or a sentence saying it was not traced)."""
        self.request_id, self.trace = request_id, trace
        self.waterfall.set_trace(trace)
        self.export_button.setEnabled(trace is not None and bool(trace.inputs))
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
        self.slowest.clear()
        for trace in traces:
            item = QListWidgetItem(summary_line(trace))
            item.setToolTip("; ".join(p.label for p in breakdown(trace)))
            item.setData(0x0100, trace.request_id)  # Qt.UserRole
            self.slowest.addItem(item)

    def set_armed(self, left: int) -> None:
        self.armed.setText(f"{left} to trace" if left else "")

    def set_notes(self, notes: list[str]) -> None:
        self.notes.setText("\n".join(notes))

    def set_command(self, text: str) -> None:
        self.command.setText(text)

    def _export_clicked(self) -> None:
        if self.request_id is not None:
            self.export_requested.emit(self.request_id)

    def _slowest_chosen(self, item: QListWidgetItem) -> None:
        request_id = item.data(0x0100)
        if request_id:
            self.request_chosen.emit(str(request_id))


class XRayController(QObject):
    """`view` shown from `xray`; `ask_path(request_id)` asks the user where to export (a
    file dialog in the viewer; None: cancelled)."""

    def __init__(
        self,
        view: XRayView,
        xray: XRay,
        *,
        ask_path: Callable[[str], str | None] | None = None,
        replay: dict[str, Any] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.view = view
        self.xray = xray
        self.ask_path = ask_path
        self.replay = dict(replay or {})  # model, url, protocol, batch, concurrency, version, batched
        self.bridge = GuiBridge(self)
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "x-ray")
        self._polling = False
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self._poll)
        view.trace_next_requested.connect(self.trace_next)
        view.export_requested.connect(self._export_asked)
        view.request_chosen.connect(self.select)
        self.timer.start()

    def trace_next(self, n: int) -> None:
        self._worker.submit(self._run, lambda: self.xray.trace_next(n), self._armed)

    def select(self, request_id: str | None) -> None:
        self.view.show_request(request_id, self.xray.get(request_id) if request_id else None)

    def _armed(self, _result: object = None) -> None:
        self.view.set_armed(self.xray.armed)
        self.view.set_notes(self.xray.notes)

    def _poll(self) -> None:
        if self._polling or self.xray.tracer is None:
            return
        self._polling = True
        self._worker.submit(self._run, self.xray.poll, self._polled)

    def _polled(self, found: object) -> None:
        self._polling = False
        if not isinstance(found, list) or not found:
            self.view.set_armed(self.xray.armed)
            return
        self.view.set_armed(self.xray.armed)
        self.view.set_slowest(self.xray.slowest(SLOWEST_LISTED))
        if self.view.request_id is not None and self.view.trace is None:
            self.select(self.view.request_id)  # its trace just came

    def _run(self, work: Callable[[], object], then: Callable[[object], None]) -> None:
        # The worker thread: the result (or the error's text) goes back to the GUI thread.
        try:
            result: object = work()
        except Exception as e:
            self.bridge.post(self._failed, str(e))
            self.bridge.post(then, None)
            return
        self.bridge.post(then, result)

    def _failed(self, message: str) -> None:
        self.view.set_notes([*self.xray.notes, message])

    def _export_asked(self, request_id: str) -> None:
        path = self.ask_path(request_id) if self.ask_path is not None else None
        if path:
            self.export(request_id, path)

    def export(self, request_id: str, path: str) -> concurrent.futures.Future[Any]:
        """Write `request_id`'s tensors for perf_analyzer (worker thread), then show the
        command line that replays them."""
        trace = self.xray.get(request_id)
        return self._worker.submit(self._run, lambda: self._write(trace, path), self._exported)

    def _write(self, trace: RequestTrace | None, path: str) -> str:
        if trace is None or not trace.inputs:
            raise ValueError("this request's tensors were not kept: trace it again to export it")
        write_input_data(path, [trace.inputs], batched=bool(self.replay.get("batched", True)))
        return replay_command(
            model=str(self.replay.get("model", trace.model)),
            url=str(self.replay.get("url", "localhost:8001")),
            protocol=str(self.replay.get("protocol", "grpc")),
            input_file=Path(path),
            batch=int(self.replay.get("batch", 1)),
            concurrency=int(self.replay.get("concurrency", 1)),
            version=str(self.replay.get("version", "")),
        )

    def _exported(self, command: object) -> None:
        if isinstance(command, str):
            self.view.set_command(command)

    def close(self) -> None:
        self.timer.stop()
        self.bridge.close()
        self._worker.shutdown(wait=False, cancel_futures=True)
