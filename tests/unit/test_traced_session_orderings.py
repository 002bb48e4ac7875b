"""A traced session's rare orderings through the channel seam (tests/fake_channel.py): a
retry's attempts and back-offs, on a server without tracing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.inference.core.spec import Timeouts
from app.inference.introspection.extensions import MISSING, Extension
from app.inference.tracing import spans as names
from app.inference.tracing.diagnosis import Finding, diagnose
from app.inference.tracing.tracer import TraceSelection
from tests.fake_channel import FakeServer, unavailable
from tests.unit.test_session_orderings import IMAGE, open_session


@pytest.fixture
def server() -> Iterator[FakeServer]:
    yield FakeServer()


def test_a_retried_request_shows_each_attempt_and_back_off_and_says_so(server: FakeServer) -> None:
    server.behaviours = [lambda call: call.end(error=unavailable())] * 2
    with open_session(server, timeouts=Timeouts(10, retry_backoff_s=0.02)) as session:
        tracer = session.start_tracing(TraceSelection.parse("all"))
        # The fake server has no trace extension: said once, the client's stages still traced.
        assert tracer.notes == [f"{MISSING[Extension.TRACE]}: the client's stages only"]
        result = session.infer(IMAGE)
        (trace,) = tracer.poll(flush=True)
    assert result.ok and result.retries == 2
    assert trace.request_id == result.request_id and not trace.has_server()
    assert len(trace.named(names.ATTEMPT)) == 2 and len(trace.named(names.RETRY_WAIT)) == 2
    assert len(trace.named(names.IN_FLIGHT)) == 1  # the last attempt
    assert trace.facts["attempts"] == 3 and trace.facts["retry_reason"] == "UNAVAILABLE"
    backoffs = [s.duration_ms for s in trace.named(names.RETRY_WAIT)]
    assert backoffs[0] >= 20.0 and backoffs[1] >= 40.0  # 0.02 s doubled
    findings = {d.finding: d for d in diagnose(trace)}
    assert findings[Finding.RETRY].message.startswith("retried 2 times after UNAVAILABLE")
    assert Finding.NO_SERVER in findings
