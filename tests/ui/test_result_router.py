"""ResultRouter in the real viewer: a burst of results reaches the request log as one insert
(at most one flush per LOG_FLUSH_MS), an export reads the log with nothing left behind, and a
result of a list cleared since feeds the log and the session's figures only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer
from app.ui.result_router import LOG_FLUSH_MS
from app.ui.state.viewer_state import RETIRED, Scope
from tests.ui.helpers import make_result
from tests.ui.viewer_fixtures import Harness, until

pytestmark = pytest.mark.gui


def test_a_burst_of_results_is_one_insert_into_the_log(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    model = viewer.window.request_log.model
    before = model.rowCount()
    inserts: list[int] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserts.append(last - first + 1))
    for i in range(50):
        viewer.router.live_result(make_result(i))
    assert model.rowCount() == before, "nothing inserted while the burst comes in"
    harness.run(until(lambda: model.rowCount() == before + 50, what="the flush"))
    assert inserts == [50], "one insert for the whole burst"

    viewer.router.live_result(make_result(50))
    viewer.export_log_csv(str(tmp_path / "log.csv"))  # flushes first: the row is in
    assert model.rowCount() == before + 51 and inserts == [50, 1]
    harness.run(until(lambda: (tmp_path / "log.csv").exists(), what="the CSV"))
    assert len((tmp_path / "log.csv").read_text().splitlines()) == 1 + before + 51
    harness.run(asyncio.sleep(2 * LOG_FLUSH_MS / 1000))
    assert inserts == [50, 1], "the flush that was due finds nothing left"


def test_a_result_of_a_list_cleared_since_feeds_the_log_and_the_session_only(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    session_before = viewer.stats.snapshot(Scope.SESSION).inputs
    viewer.router.batch_result(RETIRED, make_result(1, source="gone.jpg"))
    viewer.router.flush_log()
    assert viewer.window.request_log.model.rowCount() >= 1
    assert not viewer.gallery.has_entry("gone.jpg"), "not in the strip"
    assert viewer.stats.snapshot(Scope.SESSION).inputs == session_before + 1
    assert viewer.stats.snapshot(Scope.BATCH).inputs == 0
