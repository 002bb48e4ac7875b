"""The charts say what they draw: the load test's legend names the p50 and p95 lines in their
own colour and dash, its table shows a sweep's rows, and the tune plot's point labels never
overlap (a label without room is left out, not drawn over another)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.pipeline.sweep import LevelResult
from app.pipeline.tune_analysis import TrialResult
from app.pipeline.tune_settings import TrialSettings
from app.ui.analysis.load_ramp_window import LEGEND, P50_COLOR, P95_COLOR, LoadRampWindow, SweepPlot
from app.ui.base.bridge import GuiBridge
from app.ui.server_tools.tune_plot import TunePlot


def level(concurrency: int, throughput: float, p95_ms: float) -> LevelResult:
    return LevelResult(concurrency, "grpc", 1, throughput, p95_ms * 0.7, p95_ms, p95_ms * 1.2, 0, None, None)


def test_the_load_test_legend_names_p50_and_p95_in_their_line_colours(qtbot: QtBot) -> None:
    styles = {label: (color.name(), style) for label, color, style in LEGEND}
    assert styles["p50 latency (ms)"] == (P50_COLOR.name(), Qt.PenStyle.DashLine)
    assert styles["p95 latency (ms)"] == (P95_COLOR.name(), Qt.PenStyle.SolidLine)
    plot = SweepPlot()
    qtbot.addWidget(plot)
    plot.resize(600, 300)
    plot.set_results([level(c, 100.0 * c**0.5, 5.0 * c) for c in (1, 2, 4, 8, 16)])
    image = plot.grab().toImage()
    top = plot.fontMetrics().height() + 2  # the legend's row
    colours = {image.pixelColor(x, y).name() for x in range(image.width()) for y in range(top)}
    assert P50_COLOR.name() in colours and P95_COLOR.name() in colours, "each line's sample in the legend"


def test_the_load_test_table_shows_more_than_three_rows_at_640_px(qtbot: QtBot) -> None:
    executor = ThreadPoolExecutor(1)
    window = LoadRampWindow(None, GuiBridge(), executor)
    qtbot.addWidget(window)
    window.resize(720, 600)  # what a 1024x640 screen leaves it, frame included
    window.show()
    for c in (1, 2, 4, 8, 16, 32, 64, 128):
        window._on_level(level(c, 100.0, 5.0 * c))
    QApplication.processEvents()
    table = window.table
    visible = table.viewport().height() // table.rowHeight(0)
    print(f"load test table: {visible} rows visible of {table.rowCount()}")
    assert visible >= 5, visible
    window.close()
    executor.shutdown()


def test_the_tune_plot_labels_never_overlap(qtbot: QtBot) -> None:
    plot = TunePlot()
    qtbot.addWidget(plot)
    plot.resize(640, 320)
    # Three configs whose points crowd together: labels would sit on one another.
    trials = [
        TrialResult(
            TrialSettings(instances, 4, 100),
            instances == 1,
            [level(c, 200.0 + 3 * instances + c, 20.0 + instances + 0.5 * c) for c in (1, 2, 4, 8, 16)],
        )
        for instances in (1, 2, 3)
    ]
    plot.set_data(trials, [])
    plot.grab()  # painted
    rects = [r for r in plot.label_rects if r is not None]
    assert len(plot.label_rects) == 15 and len(rects) >= 8, plot.label_rects
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            assert not a.intersects(b), f"labels overlap: {a} {b}"
    assert all(QRectF(plot.rect()).contains(r) for r in rects)
