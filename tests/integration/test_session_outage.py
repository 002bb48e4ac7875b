"""Several servers, retries, fail-fast during an outage and recovery: a second real server
that the test stops and starts again on the same port."""

from __future__ import annotations

import time

import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec, Timeouts
from app.inference.protocol import parse_endpoints
from app.inference.result import Status
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports

pytestmark = pytest.mark.slow


def test_pool_spreads_load_survives_an_outage_and_notices_the_return(triton: EmbeddedServer) -> None:
    grpc_port, http_port, metrics_port = free_ports(3)
    ports = {"grpc_port": grpc_port, "http_port": http_port, "metrics_port": metrics_port}
    photo = skimage.data.astronaut()
    second = EmbeddedServer(model_repository(), **ports).start()
    try:
        both = TritonSession(
            SessionSpec(
                endpoints=parse_endpoints([triton.grpc_url, second.grpc_url]),
                timeouts=Timeouts(request_s=2.0),
            )
        ).open()
        alone = TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(second.grpc_url), timeouts=Timeouts(request_s=0.5, retries=2)
            )
        ).open()
        futures = [both.submit_future(photo) for _ in range(40)]
        used = {f.result(timeout=30).server for f in futures}
        assert used == {triton.grpc_url, second.grpc_url}, "requests go to both servers"

        second.stop()
        # With one server gone, requests still succeed: a failed attempt is retried elsewhere.
        after = [both.infer(photo) for _ in range(10)]
        assert all(r.ok for r in after)
        assert {r.server for r in after} == {triton.grpc_url}

        # Alone, the first failures are retried (transient) and then reported clearly...
        first = alone.infer(photo)
        assert first.status is Status.FAILED and "cannot reach" in (first.error or "")
        assert first.retries == 2 and alone.stats.snapshot().retried >= 2
        # ...and once down longer than the timeout, requests fail at once instead of hammering.
        time.sleep(0.6)
        quick = [alone.infer(photo) for _ in range(10)]
        assert sum("not sending" in (r.error or "") for r in quick) >= 8

        # The server comes back on the same port: a probe notices, requests succeed again.
        second = EmbeddedServer(model_repository(), **ports).start()
        deadline = time.monotonic() + 20
        result = alone.infer(photo)
        while not result.ok and time.monotonic() < deadline:
            time.sleep(0.3)
            result = alone.infer(photo)
        assert result.ok and len(result.detections) == 1
        both.close()
        alone.close()
    finally:
        second.stop()
