"""One request's trace as Triton writes it, read into a `ServerTrace`.

Triton's trace file (its own mode, `log_frequency` 1) holds, per request, a JSON list of
entries that share the trace's `id`: one `{"id", "model_name", "model_version",
"request_id"}` (or `"parent_id"` for a request an ensemble step or a BLS model made), then
one `{"id", "timestamps": [{"name", "ns"}]}` per mark, in the order they were taken. A
pipeline's stage requests are in the same list as their parent (the stage's entries first,
written when the parent ends). The marks:

- the protocol's: GRPC_WAITREAD_START/END (the server waiting for the message: its START is
  when the server began waiting, long before this message came: not a receive time),
  HTTP_RECV_START/END, INFER_RESPONSE_COMPLETE, GRPC_SEND_START/END, HTTP_SEND_START/END;
- the core's: REQUEST_START, QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END,
  COMPUTE_OUTPUT_START, COMPUTE_END, REQUEST_END.

`ns` is the server's steady clock (CLOCK_MONOTONIC): on the same machine, the very clock of
`time.monotonic_ns()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REQUEST_START = "REQUEST_START"
QUEUE_START = "QUEUE_START"
COMPUTE_START = "COMPUTE_START"
COMPUTE_INPUT_END = "COMPUTE_INPUT_END"
COMPUTE_OUTPUT_START = "COMPUTE_OUTPUT_START"
COMPUTE_END = "COMPUTE_END"
REQUEST_END = "REQUEST_END"


@dataclass
class ServerTrace:
    """One request as the server saw it: `marks` name -> ns on the server's clock (the first
    of a name when a mark repeats); `children`: the requests it made (ensemble steps, BLS
    stages), in the order they started."""

    trace_id: str
    model: str = ""
    version: str = ""
    request_id: str = ""
    parent_id: str = ""
    marks: dict[str, int] = field(default_factory=dict)
    children: list[ServerTrace] = field(default_factory=list)
    otel_trace_id: str = ""  # OpenTelemetry: the W3C trace id (the client's, from its traceparent)

    def mark(self, name: str) -> int | None:
        return self.marks.get(name)

    @property
    def start_ns(self) -> int | None:
        return self.marks.get(REQUEST_START, min(self.marks.values(), default=None))

    @property
    def end_ns(self) -> int | None:
        return self.marks.get(REQUEST_END, max(self.marks.values(), default=None))

    def shifted(self, offset_ns: int) -> ServerTrace:
        """The same trace with every mark moved by `offset_ns` (to another clock)."""
        return ServerTrace(
            self.trace_id,
            self.model,
            self.version,
            self.request_id,
            self.parent_id,
            {name: ns + offset_ns for name, ns in self.marks.items()},
            [child.shifted(offset_ns) for child in self.children],
            self.otel_trace_id,
        )

    def walk(self) -> Iterable[ServerTrace]:
        yield self
        for child in self.children:
            yield from child.walk()


class TraceFormatError(ValueError):
    """A trace file's text is JSON but not the shape Triton writes."""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def traces_from_entries(entries: Iterable[Any]) -> list[ServerTrace]:
    """The top-level traces of one trace file's list (the children nested under their
    parent); entries of another shape are skipped (a newer server may add some)."""
    by_id: dict[str, ServerTrace] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or "id" not in entry:
            continue
        trace_id = _text(entry["id"])
        trace = by_id.setdefault(trace_id, ServerTrace(trace_id))
        if "model_name" in entry:
            trace.model = _text(entry.get("model_name"))
            trace.version = _text(entry.get("model_version"))
            trace.request_id = _text(entry.get("request_id"))
            trace.parent_id = _text(entry.get("parent_id"))
        for mark in entry.get("timestamps", ()) or ():
            if isinstance(mark, Mapping) and "name" in mark and "ns" in mark:
                try:
                    trace.marks.setdefault(str(mark["name"]), int(mark["ns"]))
                except (TypeError, ValueError):
                    continue
    return nest(by_id.values())


def nest(traces: Iterable[ServerTrace]) -> list[ServerTrace]:
    """Children put under their parents (by `parent_id`, sorted by start); the roots returned
    (a child whose parent is not among them stays a root: it is shown, not lost)."""
    every = list(traces)
    by_id = {t.trace_id: t for t in every}
    roots = []
    for trace in every:
        parent = by_id.get(trace.parent_id) if trace.parent_id not in ("", "0") else None
        if parent is not None and parent is not trace:
            parent.children.append(trace)
        else:
            roots.append(trace)
    for trace in every:
        trace.children.sort(key=lambda t: t.start_ns or 0)
    return roots
