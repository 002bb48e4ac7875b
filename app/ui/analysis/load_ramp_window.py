"""Tools > Load test…: the progressive ramp (app.pipeline.sweep) on the current images, in the
background, with progress, Cancel, a plot of throughput and latency against concurrency with
the knee marked, a table, and CSV/PNG export.

The sweep runs on a worker of the viewer's shared executor (it holds it for the whole ramp:
the executor has room for that, app.ui.qt_app.IO_WORKERS), with sessions of its own so the
viewer's statistics are not mixed in; everything it reports comes back through the bridge to
the GUI thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import csv
import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.inference.core.spec import SessionSpec
from app.inference.transports.transport import TransportKind
from app.pipeline.sweep import (
    LevelResult,
    Sweep,
    SweepPlan,
    SweepProgress,
    find_knee,
    load_sweep_images,
    recommend,
    series,
)
from app.system.atomic_files import describe_write_error, replacing
from app.ui.base.bridge import GuiBridge
from app.ui.base.qimage import write_png
from app.ui.base.window_fit import secondary_window
from app.ui.widgets.live_plot import axis_max, format_tick
from app.ui.widgets.plot_base import PlotBase

THROUGHPUT_COLOR = QColor(30, 120, 200)
SHUTDOWN_WAIT_S = 10.0  # a cancelled level ends within its requests' deadlines
P50_COLOR = QColor(230, 120, 20)
P95_COLOR = QColor(200, 40, 40)
KNEE_COLOR = QColor(40, 160, 60)
# (what, colour, dash) of each line, as drawn: the legend says which line is p50 and which p95.
LEGEND = (
    ("throughput (req/s)", THROUGHPUT_COLOR, Qt.PenStyle.SolidLine),
    ("p50 latency (ms)", P50_COLOR, Qt.PenStyle.DashLine),
    ("p95 latency (ms)", P95_COLOR, Qt.PenStyle.SolidLine),
)
TABLE_ROW_H = 22


COLUMNS = (
    "in flight",
    "transport",
    "batch",
    "req/s",
    "±%",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "srv queue",
    "srv compute",
)
TRANSPORT_BOXES = (
    ("Automatic", TransportKind.AUTO),
    ("gRPC", TransportKind.GRPC),
    ("Shared memory", TransportKind.SHM),
)


def parse_int_list(text: str, low: int, high: int, what: str) -> list[int]:
    try:
        values = sorted({int(part) for part in text.replace(" ", "").split(",") if part})
    except ValueError:
        raise ValueError(f"{what}: comma-separated whole numbers, e.g. 1,2,4,8") from None
    if not values or values[0] < low or values[-1] > high:
        raise ValueError(f"{what}: between {low} and {high}")
    return values


LEGEND_SAMPLE = 22.0  # px of line drawn before each legend entry


class SweepPlot(PlotBase):
    """Throughput (left axis) and latency p50/p95 (right axis) against the requests in flight
    (log2 spacing); one set of lines per transport/batch series; the knee marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(QSize(320, 200), QSize(560, 300), parent)
        self.results: list[LevelResult] = []

    def set_results(self, results: Sequence[LevelResult]) -> None:
        self.results = list(results)
        self.update()

    def knee_points(self) -> list[LevelResult]:
        return [k for k in (find_knee(s) for s in series(self.results).values()) if k is not None]

    def paintEvent(self, event: QPaintEvent) -> None:
        painter, text, metrics = self.begin_paint()
        if not self.results:
            painter.setPen(text)
            painter.drawText(
                self.rect(), Qt.AlignmentFlag.AlignCenter, "Press Start: the curve appears level by level"
            )
            painter.end()
            return
        thr_top = axis_max(max(r.throughput for r in self.results), 4)
        lat_top = axis_max(max((r.p95_ms or 0.0) for r in self.results) or 1.0, 4)
        labels_l = [format_tick(thr_top * i / 4) for i in range(5)]
        labels_r = [format_tick(lat_top * i / 4) for i in range(5)]
        left = max(metrics.horizontalAdvance(t) for t in labels_l) + 12
        right = max(metrics.horizontalAdvance(t) for t in labels_r) + 12
        plot = QRectF(
            left, metrics.height() + 8, self.width() - left - right, self.height() - 3 * metrics.height() - 12
        )
        if plot.width() < 20 or plot.height() < 20:
            painter.end()
            return
        levels = sorted({r.concurrency for r in self.results})
        lo, hi = math.log2(levels[0]), math.log2(levels[-1])

        def x_of(c: int) -> float:
            return (
                plot.center().x()
                if hi == lo
                else plot.left() + (math.log2(c) - lo) / (hi - lo) * plot.width()
            )

        grid = QColor(text)
        grid.setAlpha(50)
        for i in range(5):
            y = plot.bottom() - i / 4 * plot.height()
            painter.setPen(QPen(grid, 1))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            painter.setPen(THROUGHPUT_COLOR)
            painter.drawText(
                QRectF(0, y - metrics.height() / 2, left - 4, metrics.height()),
                Qt.AlignmentFlag.AlignRight,
                labels_l[i],
            )
            painter.setPen(P95_COLOR)
            painter.drawText(
                QRectF(plot.right() + 4, y - metrics.height() / 2, right, metrics.height()),
                Qt.AlignmentFlag.AlignLeft,
                labels_r[i],
            )
        painter.setPen(text)
        for c in levels:
            painter.drawText(
                QRectF(x_of(c) - 30, plot.bottom() + 2, 60, metrics.height()),
                Qt.AlignmentFlag.AlignHCenter,
                str(c),
            )
        painter.drawText(
            QRectF(plot.left(), self.height() - metrics.height() - 2, plot.width(), metrics.height()),
            Qt.AlignmentFlag.AlignHCenter,
            "requests in flight",
        )
        # The legend: each line's own sample (colour and dash) and what it is.
        x = 2.0
        for label, color, style in LEGEND:
            y = 2 + metrics.height() / 2
            painter.setPen(QPen(color, 2, style))
            painter.drawLine(QPointF(x, y), QPointF(x + LEGEND_SAMPLE, y))
            x += LEGEND_SAMPLE + 4
            painter.drawText(QRectF(x, 2, metrics.horizontalAdvance(label) + 2, metrics.height()), label)
            x += metrics.horizontalAdvance(label) + 14
        painter.setPen(text)
        painter.drawRect(plot)
        for levels_of_series in series(self.results).values():
            self._line(
                painter,
                plot,
                [(x_of(r.concurrency), r.throughput / thr_top) for r in levels_of_series],
                THROUGHPUT_COLOR,
                Qt.PenStyle.SolidLine,
            )
            self._line(
                painter,
                plot,
                [(x_of(r.concurrency), (r.p50_ms or 0) / lat_top) for r in levels_of_series],
                P50_COLOR,
                Qt.PenStyle.DashLine,
            )
            self._line(
                painter,
                plot,
                [(x_of(r.concurrency), (r.p95_ms or 0) / lat_top) for r in levels_of_series],
                P95_COLOR,
                Qt.PenStyle.SolidLine,
            )
        for knee in self.knee_points():
            x = x_of(knee.concurrency)
            y = plot.bottom() - knee.throughput / thr_top * plot.height()
            painter.setPen(QPen(KNEE_COLOR, 2))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            painter.setBrush(KNEE_COLOR)
            painter.drawEllipse(QPointF(x, y), 5, 5)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawText(QPointF(x + 6, plot.top() + metrics.ascent() + 2), "knee")
        painter.end()

    @staticmethod
    def _line(
        painter: QPainter, plot: QRectF, xy: list[tuple[float, float]], color: QColor, style: Qt.PenStyle
    ) -> None:
        if not xy:
            return
        path = QPainterPath()
        for i, (x, frac) in enumerate(xy):
            point = QPointF(x, plot.bottom() - frac * plot.height())
            path.moveTo(point) if i == 0 else path.lineTo(point)
        painter.setPen(QPen(color, 2, style))
        painter.drawPath(path)
        painter.setBrush(color)
        for x, frac in xy:
            painter.drawEllipse(QPointF(x, plot.bottom() - frac * plot.height()), 2.5, 2.5)
        painter.setBrush(Qt.BrushStyle.NoBrush)


class LoadRampWindow(QDialog):
    finished_sweep = Signal(str)  # the recommendation (or why it stopped)

    def __init__(self, parent: QWidget, bridge: GuiBridge, executor: Executor) -> None:
        super().__init__(parent)
        self.setWindowTitle("Load test: find the knee")
        self.setModal(False)
        self._bridge = bridge
        self._executor = executor
        self._spec: SessionSpec | None = None
        self._paths: list[str] = []
        self._sweep: Sweep | None = None
        self._work_done: concurrent.futures.Future[None] | None = None  # the sweep's run
        self.results: list[LevelResult] = []
        self.recommendation = ""

        self.levels = QLineEdit("1,2,4,8,16")
        self.requests = QSpinBox()
        self.requests.setRange(10, 10_000)
        self.requests.setValue(100)
        self.batches = QLineEdit("1")
        self.transports = [QCheckBox(text) for text, _ in TRANSPORT_BOXES]
        self.transports[0].setChecked(True)
        self.images_label = QLabel()
        self.images_label.setWordWrap(True)
        self.start_button = QPushButton("Start")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.csv_button = QPushButton("Export CSV…")
        self.png_button = QPushButton("Export PNG…")
        for button in (self.csv_button, self.png_button):
            button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("ready")
        self.plot = SweepPlot()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        # Rows enough to read a sweep (header + 5 levels) before it scrolls.
        self.table.setMinimumHeight(self.table.horizontalHeader().sizeHint().height() + 5 * TABLE_ROW_H + 4)
        self.table.verticalHeader().setDefaultSectionSize(TABLE_ROW_H)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        transports = QHBoxLayout()
        for box in self.transports:
            transports.addWidget(box)
        form = QFormLayout()
        form.addRow("Requests in flight", self.levels)
        form.addRow("Requests per level", self.requests)
        form.addRow("Transports", transports)
        form.addRow("Client batch sizes", self.batches)
        form.addRow("Images", self.images_label)
        buttons = QHBoxLayout()
        for button in (self.start_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        for button in (self.csv_button, self.png_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.summary)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.csv_button.clicked.connect(lambda: self.export_csv())
        self.png_button.clicked.connect(lambda: self.export_png())
        self.resize(720, 640)
        secondary_window(self)  # fits the screen, frame included; Esc / Ctrl+W close it

    def prepare(self, spec: SessionSpec, paths: Sequence[str]) -> None:
        """The session (servers, model, profile, TLS) and images of the next run: the
        viewer's current ones. Each step of the sweep sets its own transport and batch."""
        self._spec, self._paths = spec, list(paths)
        what = f"{len(paths)} image(s) of the current batch" if paths else "the bundled sample"
        self.images_label.setText(f"{what} · model {spec.model} at {', '.join(spec.urls)}")

    @property
    def running(self) -> bool:
        return self._work_done is not None and not self._work_done.done()

    def plan(self) -> SweepPlan:
        kinds = tuple(
            kind for box, (_, kind) in zip(self.transports, TRANSPORT_BOXES, strict=True) if box.isChecked()
        )
        if not kinds:
            raise ValueError("Transports: tick at least one")
        return SweepPlan(
            levels=tuple(parse_int_list(self.levels.text(), 1, 256, "Requests in flight")),
            transports=kinds,
            client_batches=tuple(parse_int_list(self.batches.text(), 1, 64, "Client batch sizes")),
            requests=self.requests.value(),
        )

    def start(self) -> None:
        if self.running or self._spec is None:
            return
        try:
            plan = self.plan()
        except ValueError as e:
            self.summary.setText(f"<b>{e}</b>")
            return
        self.results = []
        self.table.setRowCount(0)
        self.plot.set_results([])
        self.summary.setText("")
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, plan.total_requests())
        self.progress.setValue(0)
        self.progress.setFormat("loading images…")
        wrap = self._bridge.wrap
        self._work_done = self._executor.submit(
            self._run, plan, wrap(self._on_level), wrap(self._on_progress), wrap(self._on_end)
        )

    def _run(
        self,
        plan: SweepPlan,
        on_level: Callable[[LevelResult], None],
        on_progress: Callable[[SweepProgress], None],
        on_end: Callable[[str], None],
    ) -> None:
        # On the worker: decoding images, opening sessions and waiting all block.
        try:
            assert self._spec is not None
            images, _names = load_sweep_images(self._paths)
            sweep = self._sweep = Sweep(self._spec, images, plan, on_level=on_level, on_progress=on_progress)
            sweep.run()
            message = "cancelled" if sweep.cancelled else ""
        except Exception as e:
            message = f"stopped: {e}"
        on_end(message)

    def cancel(self) -> None:
        sweep = self._sweep
        if sweep is not None:
            sweep.cancel()
        self.cancel_button.setEnabled(False)

    async def shutdown(self) -> None:
        """The viewer closes: stop the sweep and wait (bounded; the GUI thread's loop goes on)
        for its worker to end."""
        self.cancel()
        work = self._work_done
        if work is not None:
            await asyncio.wait([asyncio.wrap_future(work)], timeout=SHUTDOWN_WAIT_S)
        self.close()

    # -- reports (GUI thread) ------------------------------------------------------------------
    def _on_level(self, result: LevelResult) -> None:
        self.results.append(result)
        self.plot.set_results(self.results)
        row = self.table.rowCount()
        self.table.insertRow(row)
        values = (
            result.concurrency,
            result.transport,
            result.client_batch,
            f"{result.throughput:.1f}",
            "-"
            if result.spread is None
            else f"{result.spread * 100:.0f}" + (" noisy" if result.noisy else ""),
            result.p50_ms,
            result.p95_ms,
            result.p99_ms,
            result.server_queue_ms,
            result.server_compute_ms,
        )
        for col, value in enumerate(values):
            text = "-" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))
            self.table.setItem(row, col, QTableWidgetItem(text))
        spread_item = self.table.item(row, COLUMNS.index("±%"))
        assert spread_item is not None  # set just above
        spread_item.setToolTip(
            "How much the throughput varied while the level ran (± of its median)"
            + (f"; noisy: measured {result.runs} times, the runs pooled" if result.noisy else "")
        )

    def _on_progress(self, p: SweepProgress) -> None:
        if p.total_requests > self.progress.maximum():  # a noisy level measured again
            self.progress.setMaximum(p.total_requests)
        self.progress.setValue(min(p.done_requests, self.progress.maximum()))
        left = "" if p.eta_s is None else f" · {p.eta_s:.0f} s left"
        self.progress.setFormat(f"%p% · {p.step}{left}")

    def _on_end(self, message: str) -> None:
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.csv_button.setEnabled(bool(self.results))
        self.png_button.setEnabled(bool(self.results))
        self.progress.setFormat(message or "done")
        if not message:
            self.progress.setValue(self.progress.maximum())
        _, self.recommendation = recommend(self.results)
        self.summary.setText(message or f"<b>Recommendation:</b> {self.recommendation}")
        self.finished_sweep.emit(message or self.recommendation)

    # -- exports --------------------------------------------------------------------------------
    def export_csv(self, path: str | None = None) -> bool:
        path = path or self._ask("Export the load test (CSV)", "CSV (*.csv)", "load-test.csv")
        if not path:
            return False
        fields = ("concurrency", "transport", "client_batch", "throughput", "spread", "runs", "noisy",
                  "p50_ms", "p95_ms", "p99_ms", "server_queue_ms", "server_compute_ms", "failed")  # fmt: skip
        try:
            with replacing(path, newline="") as f:
                writer = csv.writer(f)
                writer.writerow(fields)
                for r in self.results:
                    record = r.to_record()
                    writer.writerow(["" if record.get(k) is None else record[k] for k in fields])
        except OSError as e:
            self.summary.setText(f"<b>{describe_write_error(path, e)}</b>")
            return False
        return True

    def export_png(self, path: str | None = None) -> bool:
        path = path or self._ask("Export the load test plot (PNG)", "PNG image (*.png)", "load-test.png")
        if not path:
            return False
        try:
            write_png(path, self.plot.grab().toImage())
        except (OSError, ValueError) as e:
            self.summary.setText(f"<b>{describe_write_error(path, e)}</b>")
            return False
        return True

    def _ask(self, title: str, filter_text: str, name: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(
            self, title, str(Path.home() / name), filter_text, options=QFileDialog.Option.DontUseNativeDialog
        )
        return path or None
