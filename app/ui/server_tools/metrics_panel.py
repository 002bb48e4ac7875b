"""The Server view (a dock): Triton's Prometheus metrics, live. Pending requests, CPU
utilisation and memory, GPU utilisation, memory and power only when the server reports a
GPU, and a short history plot; "not reachable" with the reason when the metrics page does
not answer. Its "Metrics address" field shows the page read and takes another one (a server
started with `serve` prints its own: `metrics=HOST:PORT`); ServerToolsUi remembers it per
server.

The page is read once a second by a MetricsPoller on a thread of its own, only while the
view is shown; the GUI thread reads the history (under its lock, no network) on a timer.
Stopping a poller waits for its read: that happens on the executor."""

from __future__ import annotations

import asyncio
import html
from concurrent.futures import Executor

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QFormLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from app.inference.introspection.metrics_history import MetricsHistory, MetricsPoller
from app.inference.introspection.server_metrics import MetricsReader, MetricsSnapshot
from app.ui.base.tasks import TaskSet
from app.ui.server_tools.metrics_plot import CPU_COLOR, GPU_COLOR, PENDING_COLOR, MetricsPlot, Series

REFRESH_MS = 1000
POLL_INTERVAL_S = 1.0
NO_SERVER = "Not connected: the metrics appear once the viewer is connected."
ADDRESS_TIP = (
    "Where Triton's Prometheus metrics are read: HOST:PORT or a URL (Triton's default port is "
    "8002; `serve` prints its own as metrics=HOST:PORT). Remembered for this server; clear it "
    "to go back to the default."
)
GIB = 1024**3
TOP_MODELS = 3  # models named beside the pending total


def gib(value: float | None) -> str:
    return "-" if value is None else f"{value / GIB:.2f} GiB"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def pending_text(snapshot: MetricsSnapshot) -> str:
    """e.g. "5 (face_detector 4, fixed_cost 1)"."""
    busy = sorted(((v, k) for k, v in snapshot.pending_requests.items() if v > 0), reverse=True)
    named = ", ".join(f"{k} {v:.0f}" for v, k in busy[:TOP_MODELS])
    return f"{snapshot.total_pending:.0f}" + (f" ({named})" if named else "")


class ServerMetricsPanel(QWidget):
    address_edited = Signal(str)  # an address typed in the field ("": back to the default)

    def __init__(self, executor: Executor, tasks: TaskSet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._executor, self._tasks = executor, tasks
        self.url: str | None = None
        self.history = MetricsHistory()
        self._poller: MetricsPoller | None = None
        self._active = False

        self.source = QLabel(NO_SERVER)
        self.source.setWordWrap(True)
        self.address = QLineEdit()
        self.address.setObjectName("metrics_address")
        self.address.setPlaceholderText("HOST:PORT or http://HOST:PORT/metrics")
        self.address.setToolTip(ADDRESS_TIP)
        self.address.setClearButtonEnabled(True)
        self.address.setEnabled(False)  # until connected
        self.address.editingFinished.connect(self._on_address_edited)
        where = QFormLayout()
        where.addRow("Metrics address", self.address)
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.pending = QLabel("-")
        self.cpu = QLabel("-")
        self.memory = QLabel("-")
        self.gpu_util = QLabel("-")
        self.gpu_memory = QLabel("-")
        self.gpu_power = QLabel("-")
        self.plot = MetricsPlot()
        self._form = QFormLayout()
        self._form.addRow("Pending requests", self.pending)
        self._form.addRow("CPU utilisation", self.cpu)
        self._form.addRow("CPU memory", self.memory)
        self._form.addRow("GPU utilisation", self.gpu_util)
        self._form.addRow("GPU memory", self.gpu_memory)
        self._form.addRow("GPU power", self.gpu_power)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.source)
        layout.addLayout(where)
        layout.addWidget(self.state)
        layout.addLayout(self._form)
        layout.addWidget(self.plot, 1)
        self._show_gpu(False)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

    # -- what to read, and when ------------------------------------------------------------------
    def set_url(self, url: str | None) -> None:
        """The metrics page of the viewer's server (None: not connected); shown in the field."""
        self.address.setText(url or "")
        self.address.setEnabled(url is not None)
        if url == self.url:
            return
        self.url = url
        self._stop_poller()
        self.history = MetricsHistory()
        self.source.setText(NO_SERVER)
        self.source.setVisible(url is None)
        self._start_poller()
        self.refresh()

    def _on_address_edited(self) -> None:
        text = self.address.text().strip()
        if self.url is not None and text != self.url:  # focus left without a change: nothing
            self.address_edited.emit(text)

    def set_active(self, on: bool) -> None:
        """Read only while the view is shown."""
        if on == self._active:
            return
        self._active = on
        if on:
            self._start_poller()
            self._timer.start()
        else:
            self._timer.stop()
            self._stop_poller()

    @property
    def polling(self) -> bool:
        return self._poller is not None

    def _start_poller(self) -> None:
        if self._active and self.url is not None and self._poller is None:
            self._poller = MetricsPoller(MetricsReader(self.url), self.history, POLL_INTERVAL_S).start()

    def _stop_poller(self) -> None:
        poller, self._poller = self._poller, None
        if poller is not None:
            self._tasks.spawn(self._stop(poller), name="metrics: stop the poller")

    async def _stop(self, poller: MetricsPoller) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, poller.stop)

    async def shutdown(self) -> None:
        self._timer.stop()
        self._active = False
        poller, self._poller = self._poller, None
        if poller is not None:
            await self._stop(poller)

    # -- what is shown ---------------------------------------------------------------------------
    def refresh(self) -> None:
        snapshot = self.history.latest()
        if self.url is None or snapshot is None:
            self.state.setText("" if self.url is None else "reading…")
            for label in (self.pending, self.cpu, self.memory):
                label.setText("-")
            self._show_gpu(False)
            self.plot.set_series([])
            return
        if not snapshot.reachable:
            self.state.setText(
                f"<b style='color:#c62828'>Not reachable</b>: {html.escape(snapshot.error or '')}"
            )
        else:
            self.state.setText("")
        self.state.setVisible(bool(self.state.text()))
        self.pending.setText(pending_text(snapshot) if snapshot.reachable else "-")
        self.cpu.setText(percent(snapshot.cpu_utilization))
        used, total = snapshot.cpu_memory_used_bytes, snapshot.cpu_memory_total_bytes
        self.memory.setText(f"{gib(used)} of {gib(total)}" if used is not None else "-")
        gpus = snapshot.gpus
        self._show_gpu(bool(gpus))
        if gpus:
            self.gpu_util.setText(", ".join(percent(g.utilization) for g in gpus))
            self.gpu_memory.setText(
                ", ".join(f"{gib(g.memory_used_bytes)} of {gib(g.memory_total_bytes)}" for g in gpus)
            )
            self.gpu_power.setText(
                ", ".join("-" if g.power_watts is None else f"{g.power_watts:.0f} W" for g in gpus)
            )
        series = [Series("CPU %", CPU_COLOR, self.history.series("cpu_utilization"))]
        if self.history.reports_gpu():
            series.append(Series("GPU %", GPU_COLOR, self.history.series("gpu_utilization")))
        series.append(Series("pending", PENDING_COLOR, self.history.series("pending_requests"), right=True))
        self.plot.set_series(series)

    def row_shown(self, field: QWidget) -> bool:
        """Whether the row of `field` (e.g. `gpu_util`) is shown: GPU rows only for a server
        that reports a GPU."""
        return self._form.isRowVisible(field)

    def _show_gpu(self, on: bool) -> None:
        for label in (self.gpu_util, self.gpu_memory, self.gpu_power):
            self._form.setRowVisible(label, on)
