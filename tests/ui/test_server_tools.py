"""The server's side in the real window, against the real server: Model > Repository… (list,
config, load with a file, a refused load's reason, unload and the viewer's model list, a
server whose model control is off), Tools > Tune… on fixed_cost (run, plot, table, exports,
Apply after the confirmation; Cancel, closing the window and closing the viewer each restore
the original config), the Server view of the metrics, and the batcher beside the time split.

The session's server is shared: every test puts fixed_cost's config back."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox, QTableWidget

from app.inference.introspection.model_config import parse_config
from app.inference.introspection.repository import RepositoryControl
from app.inference.introspection.server_metrics import parse_metrics
from app.inference.protocol import parse_endpoints, parse_url
from app.pipeline.tune import TunePhase
from app.pipeline.tune_settings import TrialSettings, settings_of
from app.server.embedded import EmbeddedServer
from app.ui.base.tasks import TaskSet
from app.ui.server_tools.metrics_panel import ServerMetricsPanel
from app.ui.server_tools.metrics_source import EmbeddedMetrics, choose_metrics_url
from app.ui.server_tools.tune_window import TuneWindow
from app.ui.viewer import Viewer
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
MODEL = "fixed_cost"
ORIGINAL = TrialSettings(1, 16, None)
BATCHING = TrialSettings(1, 16, 2000)
TEST_MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture
def control(triton: EmbeddedServer) -> Iterator[RepositoryControl]:
    """The test's own view of the shared server; fixed_cost's config is put back at the end."""
    with RepositoryControl(parse_url(triton.grpc_url)) as repository:
        original = repository.config(MODEL)
        assert settings_of(original) == ORIGINAL
        yield repository
        states = {e.name: e.state for e in repository.index()}
        if states.get(MODEL) != "READY" or repository.config(MODEL) != original:
            repository.reload_from_files(MODEL)


def table_rows(table: QTableWidget) -> list[list[str]]:
    cell = table.item
    return [
        [(item.text() if (item := cell(r, c)) is not None else "") for c in range(table.columnCount())]
        for r in range(table.rowCount())
    ]


def models_listed(viewer: Viewer) -> dict[str, str]:
    combo = viewer.window.server_panel.model_combo
    return {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}


# -- Model > Repository… -------------------------------------------------------------------------
def test_the_repository_window_shows_configs_loads_with_a_file_refuses_plainly_and_unloads(
    harness: Harness, triton: EmbeddedServer, control: RepositoryControl, tmp_path: Path
) -> None:
    original = control.config(MODEL)
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    tools = viewer.server_tools
    assert tools.repository_action.isEnabled()
    tools.repository_action.trigger()
    window = tools.repository
    assert window is not None and window.isVisible()
    harness.run(until(lambda: bool(window.entries) and window.control_enabled is not None, what="the list"))
    assert window.control_enabled is True and not window.control_note.isVisible()
    rows = {row[0]: row for row in table_rows(window.table)}
    assert rows["broken_at_load"][2] == "UNAVAILABLE" and "weights file missing" in rows["broken_at_load"][3]
    assert rows[MODEL][2] == "READY"
    assert window.selected() == "face_detector", "the viewer's model is selected"

    window.select(MODEL)
    harness.run(until(lambda: "max_batch_size: 16" in window.config_text(), what="the config"))
    assert parse_config(window.config_text()) == original, "the config the server runs, as config.pbtxt"

    two = tmp_path / "two.pbtxt"
    two.write_text(window.config_text().replace("count: 1", "count: 2"))
    window.config_file.setText(str(two))
    window.load_file_button.click()  # through the button: on the executor, then the list again
    harness.run(until(lambda: window.message.text().startswith("loaded"), what="the load"))
    assert control.config(MODEL)["instance_group"][0]["count"] == 2
    harness.run(until(lambda: "count: 2" in window.config_text(), what="the new config shown"))

    refused = tmp_path / "refused.pbtxt"
    refused.write_text(window.config_text().replace("max_batch_size: 16", "max_batch_size: 64"))
    assert not harness.run(window.load(MODEL, str(refused)))
    assert "fixed_cost supports at most 32 images per batch, not max_batch_size 64" in window.message.text()
    assert window.last_error is not None
    assert control.config(MODEL)["instance_group"][0]["count"] == 2, "the model as it was"
    typo = tmp_path / "typo.pbtxt"
    typo.write_text("max_batch_size: sixteen\n")
    assert not harness.run(window.load(MODEL, str(typo)))
    assert f"{typo}:1:" in window.message.text() and "sixteen" in window.message.text()

    assert harness.run(window.unload(MODEL))
    assert window.state_of(MODEL) != "READY"
    assert "#" in window.config_text() and "not loaded" in window.config_text()
    assert not window.unload_button.isEnabled(), "nothing to unload"
    listed = models_listed(viewer)
    assert listed[MODEL] != MODEL and "(" in listed[MODEL], "the viewer's model list shows its state"
    assert listed["face_detector"] == "face_detector"

    assert harness.run(window.reload(MODEL))  # from the repository's files: the original back
    assert window.state_of(MODEL) == "READY" and models_listed(viewer)[MODEL] == MODEL
    assert control.config(MODEL) == original
    window.close()


def test_a_server_without_repository_control_is_said_plainly_and_the_actions_are_off(
    harness: Harness, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / MODEL).symlink_to(TEST_MODELS / MODEL, target_is_directory=True)
    with EmbeddedServer(repo, model_control="none") as server:
        viewer = harness.viewer(server.grpc_url, MODEL)
        harness.connected(viewer)
        viewer.server_tools.open_repository()
        window = viewer.server_tools.repository
        assert window is not None
        harness.run(until(lambda: window.control_enabled is not None, what="the control check"))
        assert window.control_enabled is False
        assert "model control mode is 'none' or 'poll'" in window.control_note.text()
        assert window.control_note.isVisible() and [e.name for e in window.entries] == [MODEL]
        window.select(MODEL)
        for button in (
            window.load_button,
            window.unload_button,
            window.reload_button,
            window.load_file_button,
        ):
            assert not button.isEnabled() and "model control mode" in button.toolTip()
        viewer.server_tools.open_tune()
        tune = viewer.server_tools.tune
        assert tune is not None
        harness.run(until(lambda: not tune.reading, what="the tune's config read"))
        assert not tune.start_button.isEnabled() and "model control mode" in (tune.last_error or "")
        harness.close(viewer)


# -- Tools > Tune… -------------------------------------------------------------------------------
def test_the_tune_offers_the_models_the_repository_window_last_listed(
    harness: Harness, triton: EmbeddedServer, control: RepositoryControl
) -> None:
    """A model unloaded in Model > Repository… is no longer offered by Tools > Tune… (the
    session's own list, from when it opened, still says it is ready)."""
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    tools = viewer.server_tools
    session = tools.session
    assert session is not None and any(m.name == MODEL and m.ready for m in session.models)
    tools.repository_action.trigger()
    window = tools.repository
    assert window is not None
    harness.run(until(lambda: bool(window.entries), what="the list"))
    assert harness.run(window.unload(MODEL))
    tools.tune_action.trigger()
    tune = tools.tune
    assert tune is not None
    offered = [tune.form.model.itemText(i) for i in range(tune.form.model.count())]
    assert "face_detector" in offered and MODEL not in offered, offered
    assert harness.run(window.reload(MODEL))
    tune.close()
    window.close()


def open_tune(harness: Harness, viewer: Viewer) -> TuneWindow:
    harness.connected(viewer)
    viewer.server_tools.tune_action.trigger()
    window = viewer.server_tools.tune
    assert window is not None and window.isVisible()
    harness.run(until(lambda: window.ready, what="the model's config read"))
    return window


def test_the_tune_window_runs_plots_exports_and_applies_after_asking(
    harness: Harness, triton: EmbeddedServer, control: RepositoryControl, tmp_path: Path
) -> None:
    original = control.config(MODEL)
    viewer = harness.viewer(triton.grpc_url, MODEL)
    window = open_tune(harness, viewer)
    form = window.form
    assert form.chosen_model() == MODEL
    assert "now: 1 instance, max batch 16, no dynamic batching" in form.current.text()
    assert (form.instances.text(), form.max_batches.text(), form.delays.text()) == ("1,2", "16", "off,0,2000")
    assert not window.apply_button.isEnabled() and not window.csv_button.isEnabled()

    form.instances.setText("1")
    form.delays.setText("off,2000")
    form.levels.setText("1,8")
    form.requests.setValue(48)
    finished: list[str] = []
    window.finished_tune.connect(finished.append)
    window.start_button.click()
    assert window.running and not window.start_button.isEnabled() and window.cancel_button.isEnabled()
    harness.run(until(lambda: bool(finished), timeout=300, what="the tune"), timeout=320)

    result = window.tune_result
    assert result is not None and not result.interrupted and result.restored
    assert control.config(MODEL) == original, "the original config is back after the run"
    assert [t.settings for t in result.trials] == [ORIGINAL, BATCHING]
    rec = result.recommendation
    assert rec is not None and rec.settings == BATCHING and rec.speedup is not None and rec.speedup > 1
    assert len(window.plot.points()) == 4 and window.plot.recommendation is rec
    assert window.plot.front and any(p.level is rec.level for p in window.plot.front)
    rows = window.table.row_texts()
    assert len(rows) == 4 and [r[0] for r in rows] == ["1*", "1*", "2", "2"]
    chosen = [r for r in rows if r[-1] == "recommended"]
    assert len(chosen) == 1 and chosen[0][3] == "2000 us" and chosen[0][4] == "8"
    assert float(chosen[0][11]) > 1, "the server's average batch"
    assert "Recommendation" in window.summary.text() and "x</b> the original config" in window.summary.text()
    assert re.fullmatch(r"done in \d+ s; the original config was restored", window.progress.text())

    csv_path, png_path, config_path = tmp_path / "t.csv", tmp_path / "t.png", tmp_path / "config.pbtxt"
    assert harness.run(window.save_csv(str(csv_path)))
    assert harness.run(window.save_png(str(png_path)))
    assert harness.run(window.save_config(str(config_path)))
    with csv_path.open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 4 and sum(r["recommended"] == "True" for r in table) == 1
    image = QImage(str(png_path))
    assert not image.isNull() and image.width() == window.plot.width()
    assert settings_of(parse_config(config_path.read_text())) == BATCHING
    assert not list(tmp_path.glob("*.part")), "written whole: no temporary file left"
    assert not harness.run(window.save_csv(str(tmp_path / "no-such-folder" / "t.csv")))
    assert "cannot write" in (window.last_error or "")

    session = viewer.connection.session
    window.apply_button.click()
    box = window.confirmation
    assert box is not None and box.isVisible()
    assert (
        f"'{MODEL}'" in box.text()
        and triton.grpc_url in box.text()
        and "dynamic batching (2000 us)" in box.text()
    )
    applied: list[str] = []
    window.applied.connect(applied.append)
    box.button(QMessageBox.StandardButton.Cancel).click()
    harness.run(until(lambda: window.confirmation is None, what="the question answered"))
    assert settings_of(control.config(MODEL)) == ORIGINAL, "Cancel changes nothing"

    window.apply_button.click()
    box = window.confirmation
    assert box is not None
    box.button(QMessageBox.StandardButton.Yes).click()
    harness.run(until(lambda: bool(applied), what="the apply"))
    assert settings_of(control.config(MODEL)) == BATCHING
    # The viewer shows that model: it reads it again (a new session), and its details say so.
    harness.run(until(lambda: viewer.connection.session not in (None, session), what="the model read again"))
    harness.connected(viewer)
    assert "max batch 16, dynamic batching" in viewer.window.server_panel.details.toPlainText()
    window.close()


def start_slow_tune(harness: Harness, window: TuneWindow) -> None:
    """One request in flight and a half-second queue delay on the second trial: it is still
    measuring (the trial config on) when the test stops it."""
    window.form.instances.setText("1")
    window.form.delays.setText("off,500000")
    window.form.levels.setText("1")
    window.form.requests.setValue(40)
    window.start_button.click()

    def measuring_trial_2() -> bool:
        p = window.last_progress
        return p is not None and p.trial == 2 and p.phase is TunePhase.MEASURING and p.done_requests > 0

    harness.run(until(measuring_trial_2, timeout=120, what="the second trial measuring"), timeout=150)


def test_cancel_and_closing_the_window_or_the_viewer_restore_the_original_config(
    harness: Harness, triton: EmbeddedServer, control: RepositoryControl
) -> None:
    original = control.config(MODEL)
    viewer = harness.viewer(triton.grpc_url, MODEL)
    window = open_tune(harness, viewer)

    start_slow_tune(harness, window)
    assert settings_of(control.config(MODEL)) == TrialSettings(1, 16, 500000), "the trial config is on"
    window.cancel_button.click()
    harness.run(until(lambda: not window.running, timeout=60, what="the cancel"))
    harness.run(until(lambda: window.tune_result is not None, what="the result"))
    assert window.tune_result is not None and window.tune_result.interrupted and window.tune_result.restored
    assert control.config(MODEL) == original
    assert not window.apply_button.isEnabled() and "cancelled" in window.apply_button.toolTip()
    assert window.csv_button.isEnabled(), "what was measured can still be exported"

    start_slow_tune(harness, window)
    window.close()
    harness.run(until(lambda: not window.running, timeout=60, what="the tune to stop"))
    assert control.config(MODEL) == original, "closing the window restored it"

    viewer.server_tools.open_tune()
    harness.run(until(lambda: window.ready, what="the window again"))
    start_slow_tune(harness, window)
    harness.close(viewer)  # waits for the viewer's clean-up, the restore included
    assert not window.running
    assert control.config(MODEL) == original, "closing the viewer restored it"


# -- the Server view and the batcher ------------------------------------------------------------
def test_the_server_view_shows_the_embedded_servers_metrics(harness: Harness) -> None:
    viewer = harness.viewer(None)
    harness.run(until(lambda: viewer.connection.state == "starting", what="the start"))
    said = viewer.window.statusBar().currentMessage()
    assert said == "Starting: the local Triton server…" and said.count("tart") == 1, said
    harness.connected(viewer)
    tools = viewer.server_tools
    panel = tools.metrics_panel
    assert not tools.metrics_dock.isVisible() and not panel.polling, "read only while shown"
    assert tools.metrics_dock.toggleViewAction() in viewer.window.view_menu.actions()
    tools.metrics_dock.toggleViewAction().trigger()
    assert tools.metrics_dock.isVisible()
    server = viewer.connection.server
    assert (
        server is not None
        and panel.url == server.metrics_url == f"http://127.0.0.1:{server.metrics_port}/metrics"
    )
    assert panel.address.text() == server.metrics_url, "the field shows the page read"

    def figures() -> bool:
        latest = panel.history.latest()
        return len(panel.history) >= 3 and latest is not None and latest.reachable

    harness.run(until(figures, timeout=30, what="three reads"))
    panel.refresh()
    latest = panel.history.latest()
    assert latest is not None and latest.cpu_memory_used_bytes and latest.cpu_memory_used_bytes > 0
    assert re.fullmatch(r"\d+\.\d\d GiB of \d+\.\d\d GiB", panel.memory.text())
    assert float(panel.memory.text().split()[0]) > 0
    assert re.fullmatch(r"\d+%", panel.cpu.text()) and re.match(r"\d+", panel.pending.text())
    assert not panel.gpu_util.isVisible(), "no GPU reported: no GPU rows"
    assert [s.title for s in panel.plot.series] == ["CPU %", "pending"]
    assert len(panel.plot.series[0].points) >= 3
    tools.metrics_dock.toggleViewAction().trigger()
    assert not panel.polling


def test_the_server_view_says_when_the_metrics_are_not_reachable(
    harness: Harness, triton: EmbeddedServer
) -> None:
    closed = f"127.0.0.1:{triton.http_port + 10000}"  # nothing listens there
    viewer = harness.viewer(triton.grpc_url, "face_detector", metrics_url=closed)
    harness.connected(viewer)
    tools = viewer.server_tools
    tools.metrics_dock.toggleViewAction().trigger()
    panel = tools.metrics_panel
    assert panel.url == f"http://{closed}/metrics"
    harness.run(until(lambda: panel.history.latest() is not None, timeout=30, what="a read"))
    panel.refresh()
    assert "Not reachable" in panel.state.text() and panel.cpu.text() == "-"


def test_the_metrics_address_is_editable_and_remembered_per_server(
    harness: Harness, triton: EmbeddedServer
) -> None:
    """A server given by URL is guessed on port 8002 (nothing there); the address typed in the
    field is read at once, remembered for that server, used again by the next viewer, and
    clearing the field goes back to the guess and forgets it."""
    guess = "http://127.0.0.1:8002/metrics"
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    tools = viewer.server_tools
    tools.metrics_dock.toggleViewAction().trigger()
    panel = tools.metrics_panel
    field = panel.address
    assert panel.url == guess and field.text() == guess and field.isEnabled()
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, triton.metrics_address)  # as typed: HOST:PORT
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert panel.url == triton.metrics_url and field.text() == triton.metrics_url
    assert viewer.settings.metrics_address(triton.grpc_url) == triton.metrics_address

    def reachable() -> bool:
        latest = panel.history.latest()
        return latest is not None and latest.reachable

    harness.run(until(reachable, timeout=30, what="a read of the typed address"))
    harness.close(viewer)

    again = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(again)
    panel = again.server_tools.metrics_panel
    assert panel.url == triton.metrics_url, "remembered for this server"
    panel.address.clear()
    panel.address.editingFinished.emit()
    assert panel.url == guess and panel.address.text() == guess
    assert again.settings.metrics_address(triton.grpc_url) is None


def test_the_metrics_source() -> None:
    local = EmbeddedMetrics("127.0.0.1:40001", "http://127.0.0.1:40003/metrics")
    assert (
        choose_metrics_url(parse_endpoints(["127.0.0.1:40001"]), local, None)
        == "http://127.0.0.1:40003/metrics"
    )
    assert choose_metrics_url(parse_endpoints(["gpu-box:8001"]), local, None) == "http://gpu-box:8002/metrics"
    assert (
        choose_metrics_url(parse_endpoints(["gpu-box:8001"]), None, "gpu-box:9102")
        == "http://gpu-box:9102/metrics"
    )
    assert (
        choose_metrics_url(parse_endpoints(["grpc://[::1]:8001"]), None, None) == "http://[::1]:8002/metrics"
    )
    assert choose_metrics_url([], local, None) is None
    gpu_box = parse_endpoints(["gpu-box:8001"])
    assert choose_metrics_url(gpu_box, None, None, "gpu-box:9200") == "http://gpu-box:9200/metrics"
    assert choose_metrics_url(gpu_box, None, "gpu-box:9102", "gpu-box:9200") == "http://gpu-box:9102/metrics"
    typed = choose_metrics_url(parse_endpoints(["127.0.0.1:40001"]), local, None, None, "h:1")
    assert typed == "http://h:1/metrics", "typed in this run: what the user asked for"


def test_where_the_time_goes_shows_the_servers_batch(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "frames", 32, np.full((48, 64, 3), 90, np.uint8))
    # Client batches of up to 4 images: the server runs the model once per client batch.
    viewer = harness.viewer(triton.grpc_url, MODEL, open_paths=[str(folder)], client_batch=4)
    split = viewer.window.time_split
    harness.run(until(lambda: split.batcher.isVisible(), timeout=60, what="the batcher's figures"))
    found = re.fullmatch(
        r"server batch (\d+\.\d\d) images per execution · ([\d.]+) executions/s", split.batcher.text()
    )
    assert found, split.batcher.text()
    assert float(found.group(1)) > 1 and float(found.group(2)) > 0
    assert viewer.server_split.split is not None and viewer.server_split.split.executions > 0


GPU_PAGE = """\
# HELP nv_inference_pending_request_count Instantaneous number of pending requests
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="yolo",version="1"} 3
nv_inference_pending_request_count{model="face_detector",version="1"} 0
# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]
# TYPE nv_cpu_utilization gauge
nv_cpu_utilization 0.25
# HELP nv_cpu_memory_total_bytes CPU total memory (RAM), in bytes
# TYPE nv_cpu_memory_total_bytes gauge
nv_cpu_memory_total_bytes 17179869184
# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes
# TYPE nv_cpu_memory_used_bytes gauge
nv_cpu_memory_used_bytes 4294967296
# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.75
# HELP nv_gpu_memory_total_bytes GPU total memory, in bytes
# TYPE nv_gpu_memory_total_bytes gauge
nv_gpu_memory_total_bytes{gpu_uuid="GPU-1"} 8589934592
# HELP nv_gpu_memory_used_bytes GPU used memory, in bytes
# TYPE nv_gpu_memory_used_bytes gauge
nv_gpu_memory_used_bytes{gpu_uuid="GPU-1"} 2147483648
# HELP nv_gpu_power_usage GPU power usage in watts
# TYPE nv_gpu_power_usage gauge
nv_gpu_power_usage{gpu_uuid="GPU-1"} 71.5
"""


def test_the_server_view_shows_gpu_rows_only_when_the_server_reports_a_gpu(harness: Harness) -> None:
    """A page as a GPU server writes it, through the real parser (no server with a GPU here)."""
    panel = ServerMetricsPanel(harness.executor, TaskSet())
    panel.set_url("gpu-box:8002")  # not shown: nothing is read from the network
    assert not panel.polling
    panel.history.add(parse_metrics(GPU_PAGE, panel.url or ""))
    panel.refresh()
    assert panel.pending.text() == "3 (yolo 3)" and panel.cpu.text() == "25%"
    assert panel.memory.text() == "4.00 GiB of 16.00 GiB"
    assert (panel.gpu_util.text(), panel.gpu_memory.text(), panel.gpu_power.text()) == (
        "75%",
        "2.00 GiB of 8.00 GiB",
        "72 W",
    )
    assert panel.row_shown(panel.gpu_util)
    assert [s.title for s in panel.plot.series] == ["CPU %", "GPU %", "pending"]
    without_gpu = "\n".join(line for line in GPU_PAGE.splitlines() if "nv_gpu" not in line)
    panel.history.add(parse_metrics(without_gpu, panel.url or ""))
    panel.refresh()
    assert not panel.row_shown(panel.gpu_util) and not panel.row_shown(panel.gpu_power)
    panel.deleteLater()
