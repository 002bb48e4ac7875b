"""Statistics that read right in the real window: the batch scope agrees with the batch
summary (failed files included), the session's counts survive a reconnect, Reset is the
only reset, and both the statistics and the request log export as CSV."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from skimage import data

from app.server.embedded import EmbeddedServer
from app.ui.analysis.request_log import COLUMNS
from app.ui.analysis.scoped_stats import Scope
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_batch_scope_agrees_with_the_summary_and_the_session_survives_a_reconnect(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "batch", 20, data.coffee()[::10, ::10].copy(), corrupt=2)
    (folder / "notes.txt").write_text("not an image")
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    harness.run(until(lambda: job_done(viewer), what="the batch"))
    panel = viewer.window.stats_panel
    viewer.stats.poll()
    counts = viewer.runner.latest_counts()
    assert counts is not None and (counts.ok, counts.failed, counts.skipped) == (20, 2, 1)
    assert panel.scope() is Scope.BATCH
    shown = {k: panel.value_text(k) for k in ("inputs", "ok", "failed", "skipped", "sent")}
    assert shown == {"inputs": "23", "ok": "20", "failed": "2", "skipped": "1", "sent": "20"}
    summary = viewer.window.batch_panel.summary.text()
    assert "23 inputs · 20 ok · 2 failed" in summary and "1 skipped" in summary
    assert panel.value_text("p50") != "\u2013" and "This batch" in panel.note.text()

    panel.set_scope(Scope.SESSION)
    before = viewer.stats.snapshot(Scope.SESSION)
    # A reconnect (Connect pressed again: the same model; another model would run the list
    # again, a new batch scope).
    old_session = viewer.connection.session
    viewer.window.server_panel.connect_requested.emit([triton.grpc_url])
    harness.run(
        until(
            lambda: (
                viewer.connection.session not in (None, old_session)
                and viewer.connection.session.info is not None
                and viewer.connection.session.info.name == "face_detector"
            ),
            what="reconnected",
        )
    )
    after = viewer.stats.snapshot(Scope.SESSION)
    assert (after.inputs, after.ok, after.failed, after.since) == (
        before.inputs,
        before.ok,
        before.failed,
        before.since,
    ), "counts are not reset behind the user's back"
    panel.reset_button.click()
    assert panel.value_text("ok") == "0" and "reset" in panel.note.text()
    assert viewer.stats.snapshot(Scope.BATCH).ok == 20, "Reset resets the scope shown only"


def test_statistics_and_request_log_export_as_csv(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "batch", 5, data.coffee()[::10, ::10].copy(), corrupt=1)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    harness.run(until(lambda: job_done(viewer), what="the batch"))
    harness.run(until(lambda: viewer.window.request_log.visible_row_count() == 6, what="log rows"))
    stats_csv, log_csv = tmp_path / "stats.csv", tmp_path / "log.csv"
    viewer.export_stats_csv(str(stats_csv))
    viewer.window.request_log.failures_only.setChecked(True)
    viewer.export_log_csv(str(log_csv))
    harness.run(until(lambda: not viewer.exporter.running, what="the CSV files"))
    rows = {r["scope"]: r for r in csv.DictReader(stats_csv.read_text().splitlines())}
    assert set(rows) == {"batch", "live", "session"}
    assert (rows["batch"]["ok"], rows["batch"]["failed"], rows["batch"]["inputs"]) == ("5", "1", "6")
    assert rows["live"]["inputs"] == "0" and float(rows["batch"]["p50_ms"]) > 0
    table = list(csv.reader(log_csv.read_text().splitlines()))
    assert table[0] == list(COLUMNS)
    assert len(table) == 2 and table[1][4] == "failed" and "corrupt_0.png" in table[1][1], "the rows shown"
