"""The client's traced requests meet the server's traces, by the request id the app sends.

Either may come first: a trace file is written when the server ends the request, often
before the client's callback has run; over OpenTelemetry the server posts its spans in
batches, seconds later. `TraceCollector` keeps both sides until they meet, then places the
server's marks on the client's clock (app.inference.tracing.clock) and builds the request's
spans. A traced request whose server trace has not come `wait_s` after the client finished
is given with its client stages alone, saying so (the server does not trace, or traced
another request: its count ran out, another client changed the settings). Once the server
has sent one trace that matched, it is known to trace: the others are waited for up to
`traced_wait_s` (a loaded server writes its trace seconds after the reply), not given up
on after a wait meant for a server that may not trace at all.

Bounded: server traces of requests this collector does not wait for (other clients', the
app's untraced requests of a traced model) are kept only `max_unclaimed` at a time, oldest
dropped first; the client side holds only traced requests, at most `max_waiting`.
Thread-safe: the session adds client records from its reply threads, a poller the server's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.inference.tracing.clock import ClockPlacement
from app.inference.tracing.server_trace import ServerTrace
from app.inference.tracing.spans import ClientStage, RequestTrace, build_trace, server_window

WAIT_S = 5.0
TRACED_WAIT_S = 15.0
MAX_UNCLAIMED = 4096
MAX_WAITING = 4096
NOT_TRACED = "the server sent no trace of this request: client stages only"


@dataclass
class ClientRecord:
    """What the client timed of one traced request (monotonic ns)."""

    request_id: str
    model: str
    stages: list[ClientStage]
    send_ns: int | None = None  # the send began (after the tensors were written)
    reply_ns: int | None = None  # the reply (or the error) arrived
    facts: dict[str, Any] = field(default_factory=dict)
    finished_s: float = field(default_factory=time.monotonic)
    # The id the server saw: the request's own, or its client batch's ("a,b,c") when
    # several requests went as one call.
    server_request_id: str = ""
    inputs: dict[str, Any] = field(default_factory=dict, repr=False)  # the tensors sent

    def __post_init__(self) -> None:
        self.server_request_id = self.server_request_id or self.request_id


class TraceCollector:
    def __init__(
        self,
        placement: ClockPlacement,
        *,
        wait_s: float = WAIT_S,
        traced_wait_s: float = TRACED_WAIT_S,
        settle_s: float = 0.0,
        max_unclaimed: int = MAX_UNCLAIMED,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self.placement = placement
        self.wait_s = wait_s
        self.traced_wait_s = traced_wait_s
        self.server_traces = False  # a server trace has matched one of ours
        self.settle_s = settle_s
        self.max_unclaimed = max_unclaimed
        self.max_waiting = max_waiting
        self._lock = threading.Lock()
        # By the id the server saw; a client batch's members wait under one id.
        self._clients: OrderedDict[str, list[ClientRecord]] = OrderedDict()
        # Kept after a match too: a batch's later members match the same trace.
        self._servers: OrderedDict[str, ServerTrace] = OrderedDict()
        self._matched: list[tuple[ClientRecord, ServerTrace]] = []
        self.dropped = 0  # traced requests given up for lack of room (max_waiting)

    def add_client(self, record: ClientRecord) -> None:
        with self._lock:
            server = self._servers.get(record.server_request_id)
            if server is not None:
                self._match(record, server)
                return
            self._clients.setdefault(record.server_request_id, []).append(record)
            while len(self._clients) > self.max_waiting:
                _, dropped = self._clients.popitem(last=False)
                self.dropped += len(dropped)

    def add_server(self, traces: Iterable[ServerTrace]) -> None:
        with self._lock:
            for trace in traces:
                if not trace.request_id:
                    continue
                for client in self._clients.pop(trace.request_id, []):
                    self._match(client, trace)
                self._servers[trace.request_id] = trace
                while len(self._servers) > self.max_unclaimed:
                    self._servers.popitem(last=False)

    def add_stage(self, request_id: str, stage: ClientStage) -> bool:
        """A stage timed after the request ended (the GUI's), to a record not given out yet."""
        with self._lock:
            waiting = [r for records in self._clients.values() for r in records]
            for record in waiting + [client for client, _ in self._matched]:
                if record.request_id == request_id:
                    record.stages.append(stage)
                    return True
        return False

    def _match(self, client: ClientRecord, server: ServerTrace) -> None:
        window = server_window(server)
        if window is not None and client.send_ns is not None and client.reply_ns is not None:
            self.placement.observe(client.send_ns, client.reply_ns, *window)
        self._matched.append((client, server))
        self.server_traces = True

    @property
    def patience_s(self) -> float:
        """How long a traced request waits for its server trace now."""
        return max(self.wait_s, self.traced_wait_s) if self.server_traces else self.wait_s

    def ready(self, now: float | None = None, *, flush: bool = False) -> list[RequestTrace]:
        """The traces complete now: matched ones `settle_s` after the client finished (room
        for the GUI's stages), and (past `wait_s`, or all when `flush`) the client-only
        ones. Each is given once."""
        now = time.monotonic() if now is None else now
        with self._lock:
            due = [flush or now - client.finished_s >= self.settle_s for client, _ in self._matched]
            matched = [m for m, ready in zip(self._matched, due, strict=True) if ready]
            self._matched = [m for m, ready in zip(self._matched, due, strict=True) if not ready]
            late: list[ClientRecord] = []
            wait = self.patience_s
            for key in list(self._clients):
                records = self._clients[key]
                late += [r for r in records if flush or now - r.finished_s >= wait]
                records[:] = [r for r in records if not (flush or now - r.finished_s >= wait)]
                if not records:
                    del self._clients[key]
            offset, clock = self.placement.offset_ns, self.placement.describe()
        out = []
        for client, server in matched:
            trace = self._build(client, server.shifted(offset))
            trace.clock = clock
            out.append(trace)
        for record in late:
            trace = self._build(record, None)
            trace.notes.append(NOT_TRACED)
            out.append(trace)
        out.sort(key=lambda t: t.start_ns)
        return out

    @staticmethod
    def _build(client: ClientRecord, server: ServerTrace | None) -> RequestTrace:
        trace = build_trace(
            client.request_id,
            client.model,
            client.stages,
            server,
            send_ns=client.send_ns,
            reply_ns=client.reply_ns,
        )
        trace.facts.update(client.facts)
        trace.inputs = client.inputs
        return trace

    @property
    def waiting(self) -> int:
        """Traced requests not given out yet (waiting for the server's side, or settling)."""
        with self._lock:
            return sum(len(r) for r in self._clients.values()) + len(self._matched)
