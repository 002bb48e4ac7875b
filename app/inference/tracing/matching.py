"""The client's traced requests meet the server's traces, by the request id the app sends.

Either may come first: a trace file is written when the server ends the request, often
before the client's callback has run; over OpenTelemetry the server posts its spans in
batches, seconds later. `TraceCollector` keeps both sides until they meet, then places the
server's marks on the client's clock (app.inference.tracing.clock) and builds the request's
spans. A traced request whose server trace has not come `wait_s` after the client finished
is given with its client stages alone, saying so (the server does not trace, or traced
another request: its count ran out, another client changed the settings).

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


class TraceCollector:
    def __init__(
        self,
        placement: ClockPlacement,
        *,
        wait_s: float = WAIT_S,
        max_unclaimed: int = MAX_UNCLAIMED,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self.placement = placement
        self.wait_s = wait_s
        self.max_unclaimed = max_unclaimed
        self.max_waiting = max_waiting
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, ClientRecord] = OrderedDict()
        self._servers: OrderedDict[str, ServerTrace] = OrderedDict()
        self._matched: list[tuple[ClientRecord, ServerTrace]] = []
        self.dropped = 0  # traced requests given up for lack of room (max_waiting)

    def add_client(self, record: ClientRecord) -> None:
        with self._lock:
            server = self._servers.pop(record.request_id, None)
            if server is not None:
                self._match(record, server)
                return
            self._clients[record.request_id] = record
            while len(self._clients) > self.max_waiting:
                self._clients.popitem(last=False)
                self.dropped += 1

    def add_server(self, traces: Iterable[ServerTrace]) -> None:
        with self._lock:
            for trace in traces:
                if not trace.request_id:
                    continue
                client = self._clients.pop(trace.request_id, None)
                if client is not None:
                    self._match(client, trace)
                    continue
                self._servers[trace.request_id] = trace
                while len(self._servers) > self.max_unclaimed:
                    self._servers.popitem(last=False)

    def _match(self, client: ClientRecord, server: ServerTrace) -> None:
        window = server_window(server)
        if window is not None and client.send_ns is not None and client.reply_ns is not None:
            self.placement.observe(client.send_ns, client.reply_ns, *window)
        self._matched.append((client, server))

    def ready(self, now: float | None = None, *, flush: bool = False) -> list[RequestTrace]:
        """The traces complete now: matched ones, and (past `wait_s`, or all when `flush`)
        the client-only ones. Each is given once."""
        now = time.monotonic() if now is None else now
        with self._lock:
            matched, self._matched = self._matched, []
            late = [r for r in self._clients.values() if flush or now - r.finished_s >= self.wait_s]
            for record in late:
                del self._clients[record.request_id]
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
        return trace

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._clients)
