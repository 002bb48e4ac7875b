"""The viewer's Qt-free side of tracing on the real server: nothing traced until asked, the
next N, every request of a batch, the GUI's own stages, the waterfall's rows."""

from __future__ import annotations

import time

import numpy as np

from app.inference.core.session import TritonSession
from app.inference.tracing import spans as names
from app.inference.tracing.waterfall import rows
from app.pipeline.xray import XRay
from app.server.embedded import EmbeddedServer
from tests.integration.test_traces_server import FORTY
from tests.integration.test_traces_session import spec_for


def wait_for(xray: XRay, n: int, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while len(xray.kept()) < n and time.monotonic() < deadline:
        xray.poll()
        time.sleep(0.05)


def test_nothing_until_asked_then_the_next_n_with_the_guis_stages(triton: EmbeddedServer) -> None:
    image = np.zeros((32, 32, 3), np.uint8)
    xray = XRay()
    with TritonSession(spec_for(triton.grpc_url)) as session:
        xray.attach(session)
        untraced = session.infer(image)
        xray.trace_next(2)
        assert xray.armed == 2
        first, second, third = (session.infer(image) for _ in range(3))
        assert xray.is_traced(first.request_id) and not xray.is_traced(third.request_id)
        painted = time.monotonic()
        xray.gui_stage(first.request_id, names.HANDOVER, painted, painted + 0.002)
        xray.gui_stage(first.request_id, names.PAINT, painted + 0.002, painted + 0.006)
        wait_for(xray, 2)
        assert xray.get(untraced.request_id) is None and xray.get(third.request_id) is None
        trace = xray.get(first.request_id)
        assert trace is not None and xray.get(second.request_id) is not None
        assert trace.first(names.PAINT) is not None and trace.first(names.HANDOVER) is not None
        # Every request of a batch, then none again.
        xray.trace_every(True)
        batch = [session.infer(image) for _ in range(3)]
        xray.trace_every(False)
        after = session.infer(image)
        wait_for(xray, 5)
    assert all(xray.get(r.request_id) is not None for r in batch) and xray.get(after.request_id) is None
    assert xray.slowest(1)[0].duration_ms == max(t.duration_ms for t in xray.kept())
    # The waterfall: the request, its stages in order, the server's compute nested deeper.
    table = rows(trace)
    assert table[0].depth == 0 and table[0].label.startswith(f"request {first.request_id}: ")
    infer = next(r for r in table if r.name == names.COMPUTE_INFER)
    server = next(r for r in table if r.name == names.SERVER)
    assert infer.depth > server.depth > 0 and infer.ms >= 40.0 and infer.model == FORTY
    assert [r.name for r in table if r.depth == 1][-2:] == [names.HANDOVER, names.PAINT]
    assert all(r.start_ms >= 0 and r.end_ms <= table[0].end_ms + 1e-6 for r in table)
