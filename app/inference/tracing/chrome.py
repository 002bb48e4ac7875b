"""Traced requests as Chrome trace-event JSON, which Perfetto and chrome://tracing open as they are.

`{"traceEvents": [...], "displayTimeUnit": "ms"}`: one complete event (`"ph": "X"`, `ts`
and `dur` in microseconds) per span, the top one `request <id>` and its stages inside it on
the same track. Requests that overlap in time go on separate tracks (`tid`, the lowest
free one), so each track nests strictly, as the viewers draw it. Every event's `args` has
`request_id` and `model` (a pipeline's stage spans: the stage model's); the top span's also
the clock note, the server's trace id and the notes. Times count from the first request's
start. A span that a remote clock's estimate puts a little outside its parent is clipped
to it (the format draws nesting by time alone). Metadata events (`"ph": "M"`) name the
process and the tracks. Strict JSON: no NaN, no Infinity.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.inference.tracing.spans import RequestTrace, Span
from app.system.atomic_files import write_whole

PID = 1
PROCESS_NAME = "triton-viewer: traced requests"


def _us(ns: int) -> float:
    return round(ns / 1000, 3)


def _lanes(traces: Sequence[RequestTrace]) -> list[int]:
    """A track per trace: the lowest whose last request has ended."""
    ends: list[int] = []
    lanes = [0] * len(traces)
    for i in sorted(range(len(traces)), key=lambda i: traces[i].start_ns):
        trace = traces[i]
        lane = next((k for k, end in enumerate(ends) if end <= trace.start_ns), len(ends))
        if lane == len(ends):
            ends.append(0)
        ends[lane] = trace.top.end_ns
        lanes[i] = lane
    return lanes


def _track(lane: int) -> str:
    return f"requests {lane + 1}"


def _clipped(spans: Sequence[Span]) -> list[tuple[int, int]]:
    """Each span's extent clipped to its parent's (parents come first)."""
    extents: list[tuple[int, int]] = []
    for span in spans:
        start, end = span.start_ns, span.end_ns
        if span.parent is not None and span.parent < len(extents):
            low, high = extents[span.parent]
            start, end = min(max(start, low), high), max(min(end, high), low)
        extents.append((start, end))
    return extents


def trace_events(traces: Sequence[RequestTrace]) -> dict[str, Any]:
    if not traces:
        return {"traceEvents": [], "displayTimeUnit": "ms"}
    origin = min(t.start_ns for t in traces)
    lanes = _lanes(traces)
    events: list[dict[str, Any]] = []
    for trace, lane in zip(traces, lanes, strict=True):
        for index, (span, (start, end)) in enumerate(zip(trace.spans, _clipped(trace.spans), strict=True)):
            args: dict[str, Any] = {"request_id": trace.request_id, "model": span.model}
            if index == 0:
                args.update(
                    {
                        "trace_id": trace.trace_id,
                        "clock": trace.clock,
                        **({"notes": list(trace.notes)} if trace.notes else {}),
                    }
                )
            events.append(
                {
                    "name": span.name,
                    "cat": span.kind.value,
                    "ph": "X",
                    "ts": _us(start - origin),
                    "dur": _us(end - start),
                    "pid": PID,
                    "tid": lane + 1,
                    "args": args,
                }
            )
    # Parents before children at equal times: what chrome://tracing expects.
    events.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": PROCESS_NAME}}
    ]
    meta += [
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": lane + 1, "args": {"name": _track(lane)}}
        for lane in sorted(set(lanes))
    ]
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}


def write_chrome_trace(path: str | Path, traces: Sequence[RequestTrace]) -> None:
    """Written whole or not at all (a temporary file renamed into place)."""
    write_whole(path, json.dumps(trace_events(traces), allow_nan=False, separators=(",", ":")) + "\n")
