"""The OpenTelemetry side: a small OTLP/HTTP receiver in the app, Triton's spans read back
into `ServerTrace`s, and the W3C `traceparent` the client sends on the requests it traces.

What Triton 2.51 posts (seen on the embedded server in `mode=opentelemetry`): OTLP/HTTP
with the JSON encoding (`Content-Type: application/json`, `{"resourceSpans": [{
"scopeSpans": [{"spans": [...]}]}]}`), in batches every `bsp_schedule_delay` ms. Per
request three spans share the client's trace id: `InferRequest` (the protocol's marks as
events: GRPC_WAITREAD_*, GRPC_SEND_*, HTTP_*; its parent is the client's span named in
the `traceparent`), the model's span (named after the model; attributes
`triton.model_name`, `triton.model_version`, `triton.request_id`, `triton.trace_id`,
`triton.trace_parent_id`; events REQUEST_START, QUEUE_START, REQUEST_END) and its child
`compute` (COMPUTE_START ... COMPUTE_END). Times are wall-clock Unix nanoseconds.

Which requests are traced: in this mode a request that carries a `traceparent` is traced
whatever the model's trace rate (its sampled flag is not read either), as long as the
trace level is not OFF; the embedded server in this mode is started with a rate so large
that the others never are. The protobuf encoding is refused with 415 (Triton does not send
it; reading it would need opentelemetry-proto).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from app.inference.tracing.server_trace import ServerTrace, nest

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
MAX_BODY_BYTES = 64 * 2**20
MAX_QUEUED = 4096
TRACEPARENT = "traceparent"


def new_traceparent() -> tuple[str, str]:
    """A W3C traceparent for one traced request (version 00, sampled) and its trace id."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id


def _value(value: Mapping[str, Any]) -> str:
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return str(value[key])
    return ""


def _attributes(span: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(a.get("key")): _value(a.get("value") or {})
        for a in span.get("attributes", ()) or ()
        if isinstance(a, Mapping)
    }


def _events(span: Mapping[str, Any]) -> dict[str, int]:
    marks: dict[str, int] = {}
    for event in span.get("events", ()) or ():
        try:
            marks.setdefault(str(event["name"]), int(event["timeUnixNano"]))
        except (KeyError, TypeError, ValueError):
            continue
    return marks


def _spans(document: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for resource in document.get("resourceSpans", ()) or ():
        for scope in resource.get("scopeSpans", ()) or ():
            yield from (s for s in scope.get("spans", ()) or () if isinstance(s, Mapping))


def traces_from_otlp(document: Mapping[str, Any]) -> list[ServerTrace]:
    """Triton's requests in one OTLP JSON export: each model span with its `compute` child's
    marks and its protocol parent's, the stage requests nested under their parents."""
    spans = list(_spans(document))
    by_span_id = {str(s.get("spanId", "")): s for s in spans}
    children: dict[str, list[Mapping[str, Any]]] = {}
    for span in spans:
        children.setdefault(str(span.get("parentSpanId", "")), []).append(span)
    traces = []
    for span in spans:
        attributes = _attributes(span)
        if "triton.model_name" not in attributes:
            continue
        marks = _events(span)
        for child in children.get(str(span.get("spanId", "")), []):
            if "triton.model_name" not in _attributes(child):  # its compute span
                for name, ns in _events(child).items():
                    marks.setdefault(name, ns)
        protocol = by_span_id.get(str(span.get("parentSpanId", "")))
        if protocol is not None and "triton.model_name" not in _attributes(protocol):
            for name, ns in _events(protocol).items():
                marks.setdefault(name, ns)
        trace = ServerTrace(
            trace_id=attributes.get("triton.trace_id", str(span.get("spanId", ""))),
            model=attributes["triton.model_name"],
            version=attributes.get("triton.model_version", ""),
            request_id=attributes.get("triton.request_id", ""),
            parent_id=attributes.get("triton.trace_parent_id", ""),
            marks=marks,
            otel_trace_id=str(span.get("traceId", "")),
        )
        traces.append(trace)
    return nest(traces)


class OtlpReceiver:
    """An OTLP/HTTP endpoint on a thread of its own; `poll()` gives the traces received
    since the last call (at most MAX_QUEUED kept: the oldest go first)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._queue: deque[ServerTrace] = deque(maxlen=MAX_QUEUED)
        self._lock = threading.Lock()
        self.refused = 0  # exports that could not be read (encoding, size, not JSON)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                status, body = receiver._receive(self)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("otlp receiver: " + format, *args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp receiver", daemon=True)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{TRACES_PATH}"

    def _receive(self, request: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any]]:
        if request.path.split("?")[0] != TRACES_PATH:
            return 404, {"message": f"this receiver takes traces at {TRACES_PATH}"}
        length = int(request.headers.get("Content-Length") or 0)
        kind = (request.headers.get("Content-Type") or "").split(";")[0].strip()
        if length > MAX_BODY_BYTES:
            self.refused += 1
            return 413, {"message": f"an export over {MAX_BODY_BYTES} bytes"}
        body = request.rfile.read(length)
        if kind != "application/json":
            self.refused += 1
            return 415, {"message": f"OTLP/HTTP JSON only (application/json), not {kind or 'no type'}"}
        try:
            traces = traces_from_otlp(json.loads(body))
        except (ValueError, AttributeError, TypeError):
            self.refused += 1
            return 400, {"message": "not OTLP JSON"}
        with self._lock:
            self._queue.extend(traces)
        return 200, {}

    def poll(self) -> list[ServerTrace]:
        with self._lock:
            found = list(self._queue)
            self._queue.clear()
        return found

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
