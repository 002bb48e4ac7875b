"""The speed work in the real window: the transport chosen and shown, where the time goes,
and the load test window (sweep, knee, exports), against the real server."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import skimage.data
from PySide6.QtGui import QImage

from app.inference.core.stats import TimingMeans
from app.inference.introspection.server_stats import ServerSplit
from app.inference.transports.transport import TransportKind
from app.pipeline.time_split import time_segments
from app.server.embedded import EmbeddedServer
from app.ui.base.settings import ViewerSettings
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_time_segments_split_the_round_trip_with_the_servers_figures() -> None:
    client = TimingMeans(10, preprocess_ms=1.0, wait_ms=0.5, round_trip_ms=12.0, postprocess_ms=0.3, batch=1)
    server = ServerSplit(10, 2.0, 0.5, 6.0, 0.5, total_ms=9.5, batch_size=1.0)
    segments = time_segments(client, server)
    assert [s.key for s in segments] == ["preprocess", "wait", "network", "queue", "compute", "postprocess"]
    by_key = {s.key: s.ms for s in segments}
    assert by_key["network"] == pytest.approx(2.5) and by_key["compute"] == pytest.approx(7.0)
    # Without the server's statistics: the round trip stays whole.
    assert [s.key for s in time_segments(client, None)] == ["preprocess", "wait", "round_trip", "postprocess"]
    assert time_segments(None, server) == []


def test_the_transport_in_use_is_shown_and_a_new_choice_reconnects_and_is_remembered(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    panel = viewer.window.server_panel
    session = viewer.connection.session
    assert session is not None and session.transport is not None
    assert session.transport.kind is TransportKind.SHM  # automatic, on this machine
    assert "in use: shared memory" in panel.transport_label.text()
    panel.client_batch.setValue(4)
    grpc = panel.transport_combo.findData("grpc")
    panel.transport_combo.setCurrentIndex(grpc)
    panel.transport_combo.activated.emit(grpc)  # as when the user picks it from the list
    harness.run(until(lambda: viewer.connection.session not in (None, session), what="the reconnect"))
    harness.connected(viewer)
    new = viewer.connection.session
    assert new is not None and new.transport is not None and new.transport.kind is TransportKind.GRPC
    assert new.batching == 4 and "client batches of 4" in panel.transport_label.text()
    assert ViewerSettings().transport() == ("grpc", 4)


def test_where_the_time_goes_fills_in_after_a_batch(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "faces", 24, skimage.data.astronaut())
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    split = viewer.window.time_split
    harness.run(until(lambda: any(s.key == "compute" for s in split.segments), what="the server's split"))
    keys = [s.key for s in split.segments]
    assert keys == ["preprocess", "wait", "network", "queue", "compute", "postprocess"]
    assert all(s.ms >= 0 for s in split.segments)
    assert {s.key: s for s in split.segments}["compute"].ms > 0
    assert any(text.startswith("server compute ") for text in split.row_texts())


def test_the_load_test_window_sweeps_marks_and_exports(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.window.load_test_action.trigger()
    window = viewer.analysis.load_test
    assert window is not None and window.isVisible()
    window.levels.setText("1,2,4")
    window.requests.setValue(20)
    window.transports[1].setChecked(True)  # gRPC too: two series
    finished: list[str] = []
    window.finished_sweep.connect(finished.append)
    window.start_button.click()
    assert window.running and not window.start_button.isEnabled()
    harness.run(until(lambda: bool(finished), timeout=120, what="the sweep"), timeout=150)
    assert finished[0].startswith("use ")  # the recommendation
    assert window.table.rowCount() == 6 and len(window.plot.results) == 6
    assert {(r.transport, r.concurrency) for r in window.results} == {
        (t, c) for t in ("shm", "grpc") for c in (1, 2, 4)
    }
    assert "Recommendation" in window.summary.text()
    csv_path, png_path = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    assert window.export_csv(str(csv_path)) and window.export_png(str(png_path))
    with csv_path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and all(float(r["throughput"]) > 0 for r in rows)
    assert all(r["noisy"] in ("True", "False") and r["runs"] for r in rows)  # the spread's columns
    spread_col = [window.table.horizontalHeaderItem(c).text() for c in range(window.table.columnCount())]
    spreads = [window.table.item(row, spread_col.index("±%")).text() for row in range(6)]  # type: ignore[union-attr]
    assert all(text == "-" or text.split()[0].isdigit() for text in spreads), spreads
    assert not QImage(str(png_path)).isNull()
    window.close()


def test_closing_the_viewer_stops_a_running_load_test(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = harness.viewer(triton.grpc_url, "slow_faces")
    harness.connected(viewer)
    viewer.window.load_test_action.trigger()
    window = viewer.analysis.load_test
    assert window is not None
    window.levels.setText("1,2,4,8,16,32")
    window.requests.setValue(2000)
    window.start_button.click()
    harness.run(until(lambda: window.progress.value() > 0, what="the sweep to start"))
    harness.close(viewer)
    assert not window.running, "the sweep's thread ended with the viewer"


def test_the_mask_opacity_is_remembered(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    viewer.window.thresholds.set_mask_opacity(0.8)
    harness.close(viewer)
    assert ViewerSettings().mask_opacity() == pytest.approx(0.8)
    again = harness.viewer(triton.grpc_url, "face_detector")
    assert again.window.thresholds.mask_opacity() == pytest.approx(0.8)
