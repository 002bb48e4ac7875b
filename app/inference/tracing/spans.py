"""The span model: one traced request's stages on the client's clock, client and server.

A `RequestTrace` is a list of `Span`s in nanoseconds of the client's `time.monotonic_ns()`:
the top span `request <id>` from the request's first client stage to its last, the
client's own stages (read, pre-process, the wait for a free slot, serialisation or the
shared-memory write, send, decoding, the hand-over to the GUI...), and what the server
traced, placed on the client's clock (app.inference.tracing.clock): `server` with
`queue`, `compute input`, `compute infer`, `compute output`, `send reply` inside, and a
pipeline's stage requests nested in its `compute infer`, each named by its stage model
with its own queue and compute inside. `parent` is the index of the enclosing span in
`spans` (None for the top span): names repeat (a stage called twice), indices do not.

`facts` carries what the diagnosis reads besides the spans (the in-flight count and the
window when the request waited for a slot, the attempts).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.inference.tracing import server_trace as marks
from app.inference.tracing.server_trace import ServerTrace

# The client stages the app records (app.inference.core); their names are the spans' names.
READ = "read"
PREPROCESS = "pre-process"
SLOT_WAIT = "wait for a free slot"
BATCH_WAIT = "wait for the client batch"
SERIALISE = "serialise"
SHM_WRITE = "shared-memory write"
SEND = "send"
IN_FLIGHT = "in flight"  # from the send to the reply's arrival
REPLY = "reply to a worker"  # from the reply's arrival (gRPC's thread) to a worker taking it
READ_OUTPUTS = "read outputs"
DECODE = "decode outputs"
CALLBACK = "result callback"
HANDOVER = "hand-over to the GUI"
PAINT = "paint"
RETRY_WAIT = "retry back-off"
ATTEMPT = "attempt"

# Derived from the server's marks.
SERVER = "server"
QUEUE = "queue"
COMPUTE_INPUT = "compute input"
COMPUTE_INFER = "compute infer"
COMPUTE_OUTPUT = "compute output"
SEND_REPLY = "send reply"
RECEIVE = "receive"
NETWORK_OUT = "network (to the server)"


class SpanKind(enum.StrEnum):
    CLIENT = "client"
    SERVER = "server"
    NETWORK = "network"  # between the client's send and the server's receipt (and back)


@dataclass(frozen=True)
class Span:
    name: str
    start_ns: int
    end_ns: int
    model: str
    kind: SpanKind
    parent: int | None = None  # index in RequestTrace.spans

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def duration_ms(self) -> float:
        return self.duration_ns / 1e6


@dataclass(frozen=True)
class ClientStage:
    """One stage the client timed (monotonic ns), before it is a span of a trace."""

    name: str
    start_ns: int
    end_ns: int


@dataclass
class RequestTrace:
    request_id: str
    model: str
    spans: list[Span] = field(default_factory=list)
    trace_id: str = ""  # the server's trace id (the W3C trace id in OpenTelemetry mode)
    clock: str = ""  # how the server's marks were placed (ClockPlacement.describe)
    notes: list[str] = field(default_factory=list)  # e.g. "the server did not trace it"
    facts: dict[str, Any] = field(default_factory=dict)
    # The tensors the request sent (input name -> array with its batch axis), when recorded.
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def top(self) -> Span:
        return self.spans[0]

    @property
    def start_ns(self) -> int:
        return self.top.start_ns

    @property
    def duration_ms(self) -> float:
        return self.top.duration_ms

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans if s.name == name]

    def first(self, name: str) -> Span | None:
        return next((s for s in self.spans if s.name == name), None)

    def children_of(self, index: int) -> list[Span]:
        return [s for s in self.spans if s.parent == index]

    def has_server(self) -> bool:
        return any(s.kind is SpanKind.SERVER for s in self.spans)


def _span(name: str, start: int | None, end: int | None, model: str, kind: SpanKind) -> Span | None:
    if start is None or end is None or end < start:
        return None
    return Span(name, start, end, model, kind)


def _server_start(trace: ServerTrace) -> int | None:
    """When the server had the request: its HTTP receipt, else its REQUEST_START (gRPC's
    WAITREAD_START is when it began waiting, long before: never used)."""
    return trace.mark("HTTP_RECV_START") or trace.mark(marks.REQUEST_START)


def _reply_left(trace: ServerTrace) -> int | None:
    """When the reply began to leave: the protocol's send start, else the response's
    completion, else REQUEST_END."""
    for name in ("GRPC_SEND_START", "HTTP_SEND_START", "INFER_RESPONSE_COMPLETE", marks.REQUEST_END):
        if trace.mark(name) is not None:
            return trace.mark(name)
    return None


def server_window(trace: ServerTrace) -> tuple[int, int] | None:
    """The server's part of a request that the client waits for (its clock): from its
    receipt to the moment its reply began to leave. What it does after that (REQUEST_END,
    the send's completion) may end after the client already has the reply."""
    start, end = _server_start(trace), _reply_left(trace)
    return (start, end) if start is not None and end is not None and end >= start else None


def server_extent(trace: ServerTrace) -> tuple[int, int] | None:
    """From the server's receipt to its last mark (gRPC's WAITREAD_START left out)."""
    start = _server_start(trace)
    ends = [ns for name, ns in trace.marks.items() if name != "GRPC_WAITREAD_START"]
    if start is None or not ends or max(ends) < start:
        return None
    return start, max(ends)


def _phases(trace: ServerTrace, model: str) -> list[Span | None]:
    m = trace.mark
    return [
        _span(QUEUE, m(marks.QUEUE_START), m(marks.COMPUTE_START), model, SpanKind.SERVER),
        _span(COMPUTE_INPUT, m(marks.COMPUTE_START), m(marks.COMPUTE_INPUT_END), model, SpanKind.SERVER),
        _span(
            COMPUTE_INFER, m(marks.COMPUTE_INPUT_END), m(marks.COMPUTE_OUTPUT_START), model, SpanKind.SERVER
        ),
        _span(COMPUTE_OUTPUT, m(marks.COMPUTE_OUTPUT_START), m(marks.COMPUTE_END), model, SpanKind.SERVER),
    ]


class _Builder:
    """Spans appended with their parent's index."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def add(self, span: Span | None, parent: int | None) -> int | None:
        """`span` under `parent`, clipped to it: the format draws nesting by time alone."""
        if span is None:
            return None
        start, end = span.start_ns, span.end_ns
        if parent is not None:
            low, high = self.spans[parent].start_ns, self.spans[parent].end_ns
            start, end = min(max(start, low), high), max(min(end, high), low)
        self.spans.append(Span(span.name, start, end, span.model, span.kind, parent))
        return len(self.spans) - 1

    def add_server(
        self, trace: ServerTrace, parent: int | None, top_name: str, until_ns: int | None = None
    ) -> None:
        """`trace` (already on the client's clock) as a span named `top_name`, its phases and
        its children (each nested in the phase whose time it falls in: compute infer).
        `until_ns`: the client had the reply then; the server's bookkeeping after it (its
        REQUEST_END, the send's completion) is cut there."""
        extent = server_extent(trace)
        if extent is None:
            return
        end = extent[1] if until_ns is None else max(extent[0], min(extent[1], until_ns))
        model = trace.model
        me = self.add(Span(top_name, extent[0], end, model, SpanKind.SERVER), parent)
        m = trace.mark
        if m("HTTP_RECV_START") is not None:
            self.add(_span(RECEIVE, m("HTTP_RECV_START"), m("HTTP_RECV_END"), model, SpanKind.SERVER), me)
        phases: list[tuple[Span, int]] = []
        for phase in _phases(trace, model):
            index = self.add(phase, me)
            if phase is not None and index is not None:
                phases.append((phase, index))
        for prefix in ("GRPC", "HTTP"):
            sent = _span(
                SEND_REPLY, m(f"{prefix}_SEND_START"), m(f"{prefix}_SEND_END"), model, SpanKind.SERVER
            )
            self.add(sent, me)
        for child in trace.children:
            began = child.start_ns or 0
            home = next((i for phase, i in phases if phase.start_ns <= began <= phase.end_ns), me)
            self.add_server(child, home, child.model or "stage")


def build_trace(
    request_id: str,
    model: str,
    stages: Sequence[ClientStage],
    server: ServerTrace | None = None,
    *,
    send_ns: int | None = None,
    reply_ns: int | None = None,
) -> RequestTrace:
    """A request's trace from its client stages and its server trace (already on the
    client's clock). The top span covers every stage (and the server's part, which a remote
    clock's estimate may put a little outside); `network (to the server)` is the gap between
    the client's send and the server's receipt; `facts["network_ms"]` both ways."""
    window = server_window(server) if server is not None else None
    times = [t for s in stages for t in (s.start_ns, s.end_ns)]
    if window is not None:
        times += list(window)
    if not times:
        raise ValueError(f"request {request_id}: no stage to trace")
    builder = _Builder()
    top = builder.add(Span(f"request {request_id}", min(times), max(times), model, SpanKind.CLIENT), None)
    for stage in sorted(stages, key=lambda s: (s.start_ns, -s.end_ns)):
        builder.add(_span(stage.name, stage.start_ns, stage.end_ns, model, SpanKind.CLIENT), top)
    if server is not None and window is not None:
        if send_ns is not None:
            builder.add(_span(NETWORK_OUT, send_ns, window[0], model, SpanKind.NETWORK), top)
        builder.add_server(server, top, SERVER, reply_ns)
    trace_id = (server.otel_trace_id or server.trace_id) if server is not None else ""
    spans = nest_in_client_stages(cut_overlaps(builder.spans))
    trace = RequestTrace(request_id, model, spans, trace_id=trace_id)
    if window is not None and send_ns is not None and reply_ns is not None:
        # The wire both ways (and the client's and server's protocol stacks): the client's
        # window less the server's part. Not a span: the way back overlaps the server's
        # bookkeeping after its reply left.
        trace.facts["network_ms"] = round(max(0, (reply_ns - send_ns) - (window[1] - window[0])) / 1e6, 3)
    return trace


def cut_overlaps(spans: list[Span]) -> list[Span]:
    """A client stage of the top span that runs on into a later stage it does not contain
    is cut where that one begins: the send call returns after the server already has the
    message (the format nests by time alone, and two stages half over each other nest
    neither way). The server's marks are never moved."""
    out = list(spans)
    top = sorted(
        (i for i, s in enumerate(spans) if s.parent == 0), key=lambda i: (spans[i].start_ns, -spans[i].end_ns)
    )
    for a in top:
        span = out[a]
        if span.kind is not SpanKind.CLIENT:
            continue
        for b in top:
            later = out[b]
            if b != a and span.start_ns < later.start_ns < span.end_ns < later.end_ns:
                span = Span(span.name, span.start_ns, later.start_ns, span.model, span.kind, span.parent)
        out[a] = span
    return out


def nest_in_client_stages(spans: list[Span]) -> list[Span]:
    """The top span's direct children that lie inside one of its client stages (the server's
    part inside `in flight`, a send inside its attempt) re-parented to the innermost such
    stage: the tree Perfetto draws by time."""
    top_children = [i for i, s in enumerate(spans) if s.parent == 0]
    holders_of = [i for i in top_children if spans[i].kind is SpanKind.CLIENT]
    out = list(spans)
    for i in top_children:
        span = spans[i]
        holders = [
            j
            for j in holders_of
            if j != i
            and spans[j].start_ns <= span.start_ns
            and span.end_ns <= spans[j].end_ns
            and spans[j].duration_ns > span.duration_ns
        ]
        if holders:
            inner = min(holders, key=lambda j: spans[j].duration_ns)
            out[i] = Span(span.name, span.start_ns, span.end_ns, span.model, span.kind, inner)
    return out


def server_spans_total_ms(trace: RequestTrace, names: Iterable[str], *, top_level_only: bool = True) -> float:
    """The summed durations of the server phases named (the request's own, not its stages')."""
    # The request's own server part (nested in `in flight`, not a child of the top span; a
    # pipeline's stages are named after their models).
    server = next(
        (i for i, s in enumerate(trace.spans) if s.name == SERVER and s.kind is SpanKind.SERVER), None
    )
    wanted = set(names)
    return sum(
        s.duration_ms for s in trace.spans if s.name in wanted and (not top_level_only or s.parent == server)
    )
