"""The app's OTLP/HTTP receiver and the reading of Triton's OpenTelemetry spans (the shape
Triton 2.51 posts, as captured from the embedded server), over a real socket."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from app.inference.tracing.otlp import OtlpReceiver, new_traceparent, traces_from_otlp

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def attributes(**values: object) -> list[dict]:
    out = []
    for key, value in values.items():
        kind = "intValue" if isinstance(value, int) else "stringValue"
        out.append({"key": f"triton.{key}", "value": {kind: str(value) if kind == "intValue" else value}})
    return out


def events(start: int, *names: str) -> list[dict]:
    return [{"name": n, "timeUnixNano": str(start + i * 1000)} for i, n in enumerate(names)]


def export() -> dict:
    """A BLS pipeline's request and one stage, as Triton posts them."""
    spans = [
        {
            "name": "InferRequest",
            "spanId": "p1",
            "parentSpanId": "client",
            "traceId": TRACE_ID,
            "events": events(100, "GRPC_WAITREAD_END", "GRPC_SEND_START", "GRPC_SEND_END"),
        },
        {
            "name": "pipe",
            "spanId": "m1",
            "parentSpanId": "p1",
            "traceId": TRACE_ID,
            "attributes": attributes(
                model_name="pipe", model_version=1, request_id="r-1", trace_id=1, trace_parent_id=0
            ),
            "events": events(200, "REQUEST_START", "QUEUE_START", "REQUEST_END"),
        },
        {
            "name": "compute",
            "spanId": "c1",
            "parentSpanId": "m1",
            "traceId": TRACE_ID,
            "events": events(
                300, "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END"
            ),
        },
        {
            "name": "stage",
            "spanId": "m2",
            "parentSpanId": "c1",
            "traceId": TRACE_ID,
            "attributes": attributes(model_name="stage", model_version=1, trace_id=2, trace_parent_id=1),
            "events": events(310, "REQUEST_START", "QUEUE_START", "REQUEST_END"),
        },
    ]
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "triton-server"}, "spans": spans}]}]}


def test_triton_spans_become_one_trace_per_request_with_the_stage_nested() -> None:
    (trace,) = traces_from_otlp(export())
    assert (trace.model, trace.request_id, trace.otel_trace_id) == ("pipe", "r-1", TRACE_ID)
    # The model span's marks, its compute child's and its protocol parent's together.
    assert {"REQUEST_START", "COMPUTE_INPUT_END", "GRPC_SEND_START"} <= set(trace.marks)
    assert trace.marks["REQUEST_START"] == 200
    assert [c.model for c in trace.children] == ["stage"]


def post(url: str, body: bytes, kind: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": kind}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_receiver_takes_otlp_json_and_refuses_what_it_cannot_read() -> None:
    with OtlpReceiver() as receiver:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1/traces", receiver.url)
        assert post(receiver.url, json.dumps(export()).encode(), "application/json") == (200, {})
        status, answer = post(receiver.url, b"\x0a\x00", "application/x-protobuf")
        assert status == 415 and "JSON only" in answer["message"]
        assert post(receiver.url, b"{not json", "application/json")[0] == 400
        assert post(receiver.url.replace("/v1/traces", "/v1/metrics"), b"{}", "application/json")[0] == 404
        assert [t.request_id for t in receiver.poll()] == ["r-1"]
        assert receiver.poll() == [] and receiver.refused == 2


def test_a_traceparent_is_w3c_sampled_and_new_each_time() -> None:
    header, trace_id = new_traceparent()
    assert re.fullmatch(rf"00-{trace_id}-[0-9a-f]{{16}}-01", header) and len(trace_id) == 32
    assert new_traceparent()[1] != trace_id


@pytest.mark.parametrize("document", [{}, {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}])
def test_exports_without_requests_give_none(document: dict) -> None:
    assert traces_from_otlp(document) == []
