from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QFontMetricsF, QImage
from pytestqt.qtbot import QtBot

from app.ui.analysis.scoped_stats import Scope, ScopeSnapshot
from app.ui.analysis.stats_controller import StatsController
from app.ui.analysis.stats_panel import NONE_TEXT, StatsPanel
from app.ui.state.viewer_state import ViewerState
from app.ui.widgets.live_plot import LATENCY_COLOR, THROUGHPUT_COLOR, LivePlot, axis_max, nice_ceiling


def snap(**kw: object) -> ScopeSnapshot:
    base: dict[str, object] = dict(
        scope=Scope.BATCH, since=0.0, note="batch started", inputs=9, sent=8, ok=5, failed=2,
        timed_out=1, cancelled=1, skipped=0, not_started=3, p50_ms=6.43, p95_ms=12.0, p99_ms=None,
        latency_samples=5, requests_per_s=42.25,
    )  # fmt: skip
    base.update(kw)
    return ScopeSnapshot(**base)  # type: ignore[arg-type]


def test_stats_panel_shows_a_scope(qtbot: QtBot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    assert panel.value_text("p50") == NONE_TEXT == "\u2013"
    panel.show_snapshot(snap(), in_flight=2)
    keys = ("in_flight", "inputs", "sent", "ok", "failed", "timed_out", "cancelled", "not_started")
    assert {k: panel.value_text(k) for k in keys} == {
        "in_flight": "2",
        "inputs": "9",
        "sent": "8",
        "ok": "5",
        "failed": "2",
        "timed_out": "1",
        "cancelled": "1",
        "not_started": "3",
    }
    assert panel.value_text("p50") == "6.4 ms"
    assert panel.value_text("p95") == "12.0 ms"
    assert panel.value_text("p99") == NONE_TEXT
    assert panel.value_text("requests_per_s") == "42.2"
    assert "This batch · batch started" in panel.note.text()
    assert "the 5 OK so far (then the last 200)" in panel.window_note.text()
    assert ("Not started", "3") in panel.rows()
    panel.show_snapshot(snap(scope=Scope.LIVE, p99_ms=250.4, failed=0, latency_samples=200), in_flight=0)
    assert panel.value_text("p99") == "250 ms"
    assert panel.value_text("failed") == "0"
    assert "Not started" not in dict(panel.rows()), "only a batch has inputs never started"
    assert "Latency: last 200 OK requests" in panel.window_note.text()


def test_stats_panel_scope_selector_and_reset(qtbot: QtBot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    assert panel.scope() is Scope.SESSION
    with qtbot.waitSignal(panel.scope_changed, timeout=200) as changed:
        panel.set_scope(Scope.LIVE)
    assert changed.args == [Scope.LIVE] and changed.args[0] is Scope.LIVE
    with qtbot.waitSignal(panel.reset_requested, timeout=200) as reset:
        panel.reset_button.click()
    assert reset.args[0] is Scope.LIVE


def test_stats_panel_extra_rows(qtbot: QtBot) -> None:
    panel = StatsPanel()
    qtbot.addWidget(panel)
    panel.set_extra("capture fps", "29.8")
    panel.set_extra("dropped frames", "3")
    panel.set_extra("capture fps", "30.1")
    assert panel.extra_names() == ["capture fps", "dropped frames"]
    assert panel.value_text("capture fps") == "30.1"
    panel.remove_extra("capture fps")
    assert panel.extra_names() == ["dropped frames"]


def test_live_plot_drops_points_older_than_60s(qtbot: QtBot) -> None:
    plot = LivePlot()
    qtbot.addWidget(plot)
    for t in range(0, 100, 5):
        plot.add_point(1000.0 + t, 5.0 + t / 10, 20.0)
    times = [p.t for p in plot.points()]
    assert times[-1] == 1095.0
    assert min(times) >= 1095.0 - 60
    assert times[0] == 1035.0 and len(times) == 13  # 1035..1095: exactly 60 s kept


def test_live_plot_axes_scale_to_data(qtbot: QtBot) -> None:
    plot = LivePlot()
    qtbot.addWidget(plot)
    assert nice_ceiling(7.3) == 8 and nice_ceiling(42) == 50 and nice_ceiling(0.27) == 0.3
    assert axis_max(23.5, 4) == 24  # ticks 6, 12, 18, 24
    plot.add_point(1.0, 7.3, 130.0)
    plot.add_point(2.0, None, 90.0)  # no latency yet in this interval: throughput still plotted
    assert plot.y_ranges() == (8.0, 160.0)
    plot.add_point(3.0, 30.0, 10.0)
    assert plot.y_ranges() == (32.0, 160.0)  # 4 steps of 8 ms


def _has_color(img: QImage, color: QColor) -> bool:
    for y in range(0, img.height(), 1):
        for x in range(0, img.width(), 1):
            c = img.pixelColor(x, y)
            if (
                abs(c.red() - color.red()) + abs(c.green() - color.green()) + abs(c.blue() - color.blue())
                < 30
            ):
                return True
    return False


def test_live_plot_paints_both_series(qtbot: QtBot) -> None:
    plot = LivePlot()
    qtbot.addWidget(plot)
    plot.resize(300, 160)
    for t in range(30):
        plot.add_point(float(t), 10.0 + t % 5, 50.0 + t)
    img = plot.grab().toImage()
    # Only the two series lines are drawn in those colours inside the plot area.
    inner = img.copy(60, 40, 180, 80)
    assert _has_color(inner, LATENCY_COLOR)
    assert _has_color(inner, THROUGHPUT_COLOR)


@pytest.mark.parametrize(("latency", "throughput"), [(0.9, 0.9), (1234.0, 0.3), (7.3, 18_000.0)])
def test_live_plot_tick_labels_are_never_cut(qtbot: QtBot, latency: float, throughput: float) -> None:
    plot = LivePlot()
    qtbot.addWidget(plot)
    plot.resize(320, 160)
    plot.add_point(1.0, latency, throughput)
    metrics = QFontMetricsF(plot.font())
    area = plot.plot_rect(metrics)
    lat_top, thr_top = plot.y_ranges()
    for label in plot.tick_labels(lat_top):
        assert metrics.horizontalAdvance(label) <= area.left() - 4, label
    for label in plot.tick_labels(thr_top):
        assert metrics.horizontalAdvance(label) <= plot.width() - area.right() - 4, label


@pytest.mark.parametrize("throughput", [0.0, 0.3, 2.5, 37.0])
def test_axis_labels_of_an_idle_or_slow_series_are_numbers(qtbot: QtBot, throughput: float) -> None:
    """No request in the last minute: the axis reads 0 ... 1, never "0." five times."""
    plot = LivePlot()
    qtbot.addWidget(plot)
    plot.add_point(1.0, None, throughput)
    _lat_top, thr_top = plot.y_ranges()
    labels = plot.tick_labels(thr_top)
    assert len(set(labels)) == len(labels), labels
    assert all(not label.endswith(".") for label in labels), labels
    assert float(labels[-1]) >= throughput and float(labels[0]) == 0


def test_the_scope_shown_is_the_viewer_states_and_the_selector_writes_it(qtbot: QtBot) -> None:
    state, panel, plot = ViewerState(), StatsPanel(), LivePlot()
    qtbot.addWidget(panel)
    qtbot.addWidget(plot)
    stats = StatsController(state, panel, plot, lambda: 0, lambda: None)
    assert panel.scope() is state.scope is Scope.SESSION
    stats.batch_started()  # a new batch: its scope is shown
    assert state.scope is Scope.BATCH and panel.scope() is Scope.BATCH
    panel.scope_combo.setCurrentIndex(panel.scope_combo.findData(Scope.LIVE.value))  # the user
    assert state.scope is Scope.LIVE
    state.set_scope(Scope.SESSION)  # anyone else: the selector follows
    assert panel.scope() is Scope.SESSION
