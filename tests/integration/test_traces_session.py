"""A session's traced requests on the real server: every client stage the session owns, the
server's spans inside, the diagnosis, the tensors sent exported for perf_analyzer."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, Limits, SessionSpec
from app.inference.protocol import parse_endpoints, parse_url
from app.inference.result import Status
from app.inference.tracing import spans as names
from app.inference.tracing.diagnosis import Finding, diagnose
from app.inference.tracing.perf_analyzer import input_data, read_input_data
from app.inference.tracing.settings import TraceControl
from app.inference.tracing.spans import RequestTrace
from app.inference.tracing.tracer import Tracer, TraceSelection
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.open_channel import open_channel
from app.server.embedded import EmbeddedServer
from tests.integration.test_traces_server import FORTY


def spec_for(url: str, **limits: object) -> SessionSpec:
    return SessionSpec(endpoints=parse_endpoints(url), model=FORTY, limits=Limits(**limits))  # type: ignore[arg-type]


def drain(tracer: Tracer, wanted: int, timeout_s: float = 20) -> list[RequestTrace]:
    found: list[RequestTrace] = []
    deadline = time.monotonic() + timeout_s
    while len(found) < wanted and time.monotonic() < deadline:
        found += tracer.poll()
        time.sleep(0.05)
    return found + tracer.poll(flush=True)


def images(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(0, 256, (24 + 8 * i, 40, 3), dtype=np.uint8) for i in range(n)]


@pytest.mark.parametrize(
    "url_of", [lambda t: t.grpc_url, lambda t: f"http://{t.http_url}"], ids=["grpc", "http"]
)
def test_every_stage_of_a_traced_request_on_one_timeline(triton: EmbeddedServer, url_of) -> None:
    sent = images(3)
    with TritonSession(spec_for(url_of(triton), max_in_flight=1)) as session:
        tracer = session.start_tracing(TraceSelection.parse("all"))
        tracer.keep_inputs = True  # for the perf_analyzer export
        assert tracer.notes == []
        # Submitted back to back with one request in flight at most: each waits for the slot.
        futures = [session.submit_future(image) for image in sent]
        results = [f.result(30) for f in futures]
        traces = drain(tracer, len(sent))
    assert [r.status for r in results] == [Status.OK] * 3
    by_id = {t.request_id: t for t in traces}
    assert sorted(by_id) == sorted(r.request_id for r in results)
    for result, image in zip(results, sent, strict=True):
        trace = by_id[result.request_id]
        stages = {s.name for s in trace.spans}
        assert {
            names.PREPROCESS,
            names.SEND,
            names.IN_FLIGHT,
            names.REPLY,
            names.READ_OUTPUTS,
            names.DECODE,
            names.CALLBACK,
        } <= stages, stages
        assert stages & {names.SERIALISE, names.SHM_WRITE}
        infer, flight = trace.first(names.COMPUTE_INFER), trace.first(names.IN_FLIGHT)
        assert infer is not None and flight is not None and infer.duration_ms >= 40.0
        assert flight.start_ns <= infer.start_ns <= infer.end_ns <= flight.end_ns
        queue_and_compute = sum(
            s.duration_ms
            for s in trace.spans
            if s.name in (names.QUEUE, names.COMPUTE_INPUT, names.COMPUTE_INFER, names.COMPUTE_OUTPUT)
            and s.model == FORTY
        )
        assert queue_and_compute <= result.latency_ms
        # The exact tensor sent (this raw-image model takes the image as it is).
        np.testing.assert_array_equal(trace.inputs["image"], image[None])
    # The later ones waited for the slot, and the diagnosis says so with the figures.
    waited = [t for t in traces if t.first(names.SLOT_WAIT) is not None]
    assert waited, [t.spans for t in traces]
    finding = diagnose(max(waited, key=lambda t: t.first(names.SLOT_WAIT).duration_ms))[0]  # type: ignore[union-attr]
    assert finding.finding is Finding.WINDOW_FULL and finding.message.endswith("in flight 1 of 1")
    # The perf_analyzer export of them round-trips to the very tensors sent.
    document = json.loads(
        json.dumps(input_data([t.inputs for t in traces], {"image": "UINT8"}, batched=True))
    )
    back = read_input_data(document, {"image": "UINT8"})
    order = [by_id[r.request_id] for r in results]
    assert len(back) == 3
    for entry, trace in zip(back, sorted(order, key=lambda t: t.start_ns), strict=True):
        np.testing.assert_array_equal(entry["image"], trace.inputs["image"][0])


def test_the_next_n_then_none_and_the_servers_settings_put_back(triton: EmbeddedServer) -> None:
    with TritonSession(spec_for(triton.grpc_url)) as session:
        tracer = session.start_tracing(TraceSelection.parse("2"))
        results = [session.submit_future(image).result(30) for image in images(4)]
        traces = drain(tracer, 2)
        assert [t.request_id for t in traces] == [r.request_id for r in results[:2]]
        assert all(t.has_server() for t in traces)
    channel = open_channel(parse_url(triton.grpc_url), ConnectionOptions())
    try:
        settings = TraceControl(channel, {}, session.features).settings(FORTY)
    finally:
        channel.close()
    assert settings is not None and not settings.on and settings.log_frequency == 0


def test_a_client_batch_members_each_have_their_trace_with_the_one_call(triton: EmbeddedServer) -> None:
    spec = dataclasses.replace(
        spec_for(triton.grpc_url), delivery=Delivery(client_batch=4, batch_delay_ms=30)
    )
    with TritonSession(spec) as session:
        assert session.batching == 4
        tracer = session.start_tracing(TraceSelection.parse("2"))
        futures = [session.submit_future(image) for image in [np.zeros((32, 32, 3), np.uint8)] * 3]
        results = [f.result(30) for f in futures]
        traces = drain(tracer, 2)
    assert all(r.ok for r in results)
    assert sorted(t.request_id for t in traces) == sorted(r.request_id for r in results[:2])
    # Both went in one call with the third: the server's trace of that call is in each.
    assert len({t.trace_id for t in traces}) == 1 and traces[0].trace_id
    for trace in traces:
        assert trace.first(names.BATCH_WAIT) is not None
        infer = trace.first(names.COMPUTE_INFER)
        assert infer is not None and infer.duration_ms >= 40.0
