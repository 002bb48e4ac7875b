"""The Request log's X-ray view: a request's waterfall and its diagnosis in words, "Trace the
next N requests" on the real server, the slowest listed, the perf_analyzer export."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pytestqt.qtbot import QtBot

from app.inference.core.session import TritonSession
from app.inference.tracing import spans as names
from app.inference.tracing.perf_analyzer import read_input_data
from app.pipeline.xray import XRay
from app.server.embedded import EmbeddedServer
from app.ui.analysis.request_log import RequestLog
from app.ui.analysis.xray_controller import XRayController
from app.ui.analysis.xray_view import XRayView
from tests.integration.test_traces_session import spec_for
from tests.unit.test_trace_diagnosis import server, traced


def full_window_trace():  # type: ignore[no-untyped-def]
    return traced(
        [(names.SLOT_WAIT, 0, 31), (names.IN_FLIGHT, 31, 45), (names.DECODE, 48, 49)],
        server(32, 0.1, 12),
        31,
        45,
        in_flight=2,
        window=2,
    )


def test_the_waterfall_names_the_wait_and_the_gap_and_the_diagnosis_says_why(qtbot: QtBot) -> None:
    view = XRayView()
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.show_request("r", full_window_trace())
    texts = view.waterfall.row_texts()
    assert texts[0] == "request r: 49.0 ms"
    assert "  waited 31.0 ms for a free slot: in flight 2 of 2" in texts
    assert "  3.0 ms unaccounted before decode outputs" in texts
    # The server's compute is drawn inside its part, inside the time in flight.
    rows = [r.name for r in view.waterfall.rows]
    flight = view.waterfall.bar_rect(rows.index(names.IN_FLIGHT))
    srv = view.waterfall.bar_rect(rows.index(names.SERVER))
    infer = view.waterfall.bar_rect(rows.index(names.COMPUTE_INFER))
    assert (
        flight.left() <= srv.left() <= infer.left()
        and infer.right() <= srv.right() + 0.5 <= flight.right() + 1
    )
    assert view.waterfall.rows[rows.index(names.COMPUTE_INFER)].depth == 3
    assert view.diagnosis.text().startswith(
        "• waited 31.0 ms for a free slot: in flight 2 of 2: the client is"
    )
    assert view.title.text() == "Request r (m): 49.0 ms"
    # A request that was not traced says so, and what to do.
    view.show_request("other-7", None)
    assert view.waterfall.rows == [] and "other-7 was not traced" in view.title.text()
    assert not view.export_button.isEnabled()


def test_trace_the_next_requests_then_select_one_in_the_log(
    qtbot: QtBot, triton: EmbeddedServer, tmp_path: Path
) -> None:
    image = np.zeros((40, 48, 3), np.uint8)
    log, view = RequestLog(), XRayView()
    qtbot.addWidget(log)
    qtbot.addWidget(view)
    xray = XRay()
    with TritonSession(spec_for(triton.grpc_url, max_in_flight=2)) as session:
        replay = {"model": "fixed_40ms", "url": triton.grpc_url}
        controller = XRayController(view, xray, replay=replay)
        controller.attach_now(session).result(10)
        log.selected.connect(lambda rid: controller.choose(rid or None))
        try:
            view.count.setValue(2)
            view.trace_button.click()
            qtbot.waitUntil(lambda: view.armed.text() == "2 to trace", timeout=10_000)
            assert xray.armed == 2
            futures = [session.submit_future(image) for _ in range(3)]
            results = [f.result(30) for f in futures]
            log.add_results(results)
            # The two traced appear in the slowest list once their traces are in.
            qtbot.waitUntil(lambda: view.slowest.rowCount() == 2, timeout=20_000)
            traced_ids = {view.slowest.row_texts(i)[0] for i in range(2)}
            assert traced_ids == {results[0].request_id, results[1].request_id}
            for i in range(2):  # its breakdown: the compute of about 40 ms, a finding in words
                _rid, total, _queue, compute, _net, _gui, finding = view.slowest.row_texts(i)
                assert float(compute) >= 40.0 and float(total) >= float(compute) and finding
            # Selecting the first request's row shows its X-ray.
            log.table.selectRow(0)
            qtbot.waitUntil(lambda: view.trace is not None, timeout=5_000)
            assert view.request_id == results[0].request_id
            infer = next(r for r in view.waterfall.rows if r.name == names.COMPUTE_INFER)
            assert infer.ms >= 40.0 and infer.model == "fixed_40ms"
            assert view.diagnosis.text().startswith("• ")
            assert view.export_button.isEnabled()
            # The third was not traced.
            log.table.selectRow(2)
            qtbot.waitUntil(lambda: "was not traced" in view.title.text(), timeout=5_000)
            # The export of the first: its exact tensor, and the command that replays it.
            out = tmp_path / "replay.json"
            controller.export(results[0].request_id, str(out)).result(10)
            qtbot.waitUntil(lambda: view.command.text() != "", timeout=5_000)
            assert view.command.text().startswith("perf_analyzer -m fixed_40ms -u ")
            (entry,) = read_input_data(json.loads(out.read_text()), {"image": "UINT8"})
            np.testing.assert_array_equal(entry["image"], image)
        finally:
            controller.close()
