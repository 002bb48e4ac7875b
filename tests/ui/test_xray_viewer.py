"""The request X-ray in the whole window, against the real server and the fixed_40ms model:
Analyse > Trace requests, a request selected in the Request log shows its waterfall (the
`compute infer` of about 40 ms, the viewer's hand-over) and its diagnosis in words; the next N
frames of a live video file traced, exactly N, with the live view's paint; the exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.inference.tracing import spans as names
from app.server.embedded import EmbeddedServer
from app.ui.viewer import Viewer
from tests.ui.live_fixtures import make_slow_video
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
FORTY = "fixed_40ms"


def row_of(viewer: Viewer, request_id: str) -> int:
    log = viewer.window.request_log
    return next(r for r in range(log.visible_row_count()) if log.request_id_at(r) == request_id)


def test_trace_all_then_select_a_logged_request_shows_its_x_ray(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "images", 3, np.full((48, 64, 3), 90, np.uint8))
    viewer = harness.viewer(triton.grpc_url, FORTY)
    harness.connected(viewer)
    x = viewer.xray
    assert not x.dock.isVisible() and x.mode_actions["off"].isChecked()
    assert x.xray.tracer is None  # nothing asked of the server's tracing until asked
    x.mode_actions["all"].trigger()  # Analyse > Trace requests > All requests
    assert x.dock.isVisible() and x.mode_actions["all"].isChecked()
    # Attached, then the server's tracing turned on, then every request selected: from then on.
    harness.run(until(lambda: x.xray.tracing_all, what="tracing every request"))
    viewer.open_paths([str(folder)])
    harness.run(until(lambda: len(x.xray.kept()) == 3, what="the 3 requests' traces"))
    viewer.router.flush_log()
    # The slowest table lists them with their breakdown.
    harness.run(until(lambda: x.view.slowest.rowCount() == 3, what="the slowest table"))
    queued = []
    for row in range(3):
        _rid, total, queue, compute, _net, _gui, finding = x.view.slowest.row_texts(row)
        assert float(compute) >= 40.0 and float(total) >= float(compute) and finding
        queued.append(float(queue))
    # Sent together to one instance: the later ones queued behind the first's 40 ms.
    assert max(queued) >= 30.0, queued
    # A row of the log selected: its X-ray.
    trace = x.xray.kept()[0]
    viewer.window.request_log.table.selectRow(row_of(viewer, trace.request_id))
    assert x.view.request_id == trace.request_id and x.view.trace is trace
    infer = next(r for r in x.view.waterfall.rows if r.name == names.COMPUTE_INFER)
    assert infer.ms >= 40.0 and infer.model == FORTY  # (no upper bound: a loaded machine sleeps longer)
    top = x.view.waterfall.rows[0]
    server = next(r for r in x.view.waterfall.rows if r.name == names.SERVER)
    assert top.start_ms <= server.start_ms and server.end_ms <= top.end_ms + 1e-6
    assert server.start_ms <= infer.start_ms and infer.end_ms <= server.end_ms + 1e-6
    # The viewer's own stage: the result handed over to the GUI thread.
    handover = trace.first(names.HANDOVER)
    assert handover is not None and handover.duration_ms >= 0.0
    assert handover.start_ns >= trace.first(names.CALLBACK).start_ns  # type: ignore[union-attr]
    assert x.view.diagnosis.text().startswith("• ") and "ms" in x.view.diagnosis.text()
    assert x.view.title.text().startswith(f"Request {trace.request_id} ({FORTY}): ")
    # Exports: the Chrome trace of every traced request, this request's tensors.
    chrome = tmp_path / "trace.json"
    x.controller.export_chrome(str(chrome), every=True).result(10)
    events = json.loads(chrome.read_text())["traceEvents"]
    tops = [e for e in events if e.get("ph") == "X" and e["name"].startswith("request ")]
    assert len(tops) == 3 and all(e["args"]["model"] == FORTY for e in tops)
    tensors = tmp_path / "tensors.json"
    x.controller.export(trace.request_id, str(tensors)).result(10)
    harness.run(until(lambda: x.view.command.text() != "", what="the replay command"))
    assert x.view.command.text().startswith(f"perf_analyzer -m {FORTY} -u ")
    assert json.loads(tensors.read_text())["data"][0]["image"]["shape"] == [48, 64, 3]
    # Off: the next requests are not traced.
    x.mode_actions["off"].trigger()
    harness.run(until(lambda: x.xray.armed == 0 and not x.xray.tracer.selection.active, what="off"))  # type: ignore[union-attr]


def test_trace_the_next_n_frames_of_a_live_video_traces_exactly_n(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = make_slow_video(tmp_path / "clip.avi", frames=40, delay_ms=0)
    viewer = harness.viewer(triton.grpc_url, FORTY)
    harness.connected(viewer)
    x = viewer.xray
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 3, what="the live video playing"))
    assert x.xray.kept() == []
    x.view.count.setValue(5)
    x.view.trace_button.click()  # the X-ray view's "Trace the next 5 requests"
    assert x.dock.isVisible()
    # A loaded machine (three test workers on two cores) can write a server's trace after the
    # collector's 5 s: wait longer here, so every kept trace is a matched one.
    harness.run(until(lambda: x.xray.tracer is not None, what="the tracer"))
    x.xray.tracer.collector.wait_s = 60.0  # type: ignore[union-attr]
    harness.run(until(lambda: len(x.xray.kept()) >= 5, what="5 traces"))
    harness.run(until(lambda: x.controller.mode == "off", what="back to off once the 5 were taken"))
    shown_before = viewer.live.meter.shown
    harness.run(until(lambda: viewer.live.meter.shown >= shown_before + 10, what="10 more frames"))
    viewer.live.stop()
    harness.run(until(lambda: viewer.live.idle, what="stopped"))
    x.xray.poll(flush=True)
    traces = x.xray.kept()
    assert len(traces) == 5, [t.request_id for t in traces]  # exactly N, though the video went on
    for trace in traces:
        infer = trace.first(names.COMPUTE_INFER)
        assert infer is not None and infer.duration_ms >= 40.0
        assert trace.first(names.HANDOVER) is not None
    # Frames drawn on the screen got their paint (a frame overtaken before its paint did not).
    painted = [t for t in traces if t.first(names.PAINT) is not None]
    assert painted, "at least one traced frame was painted"
    # Following the live picture: the X-ray shows a traced frame that was on the screen.
    assert x.view.follow.isChecked()
    harness.run(until(lambda: x.view.trace is not None, what="a followed frame shown"))
    shown = x.view.trace
    assert any(t is shown for t in traces) and shown.first(names.PAINT) is not None  # type: ignore[union-attr]
