"""A traced request's spans as the JSONL records carry them (DESIGN.md's record contract).

`"trace": {"trace_id", "clock", "spans": [{"name", "model", "start_ms", "end_ms",
"parent"}]}`: times in milliseconds from the request's start (its top span), `parent` the
index of the enclosing span in `spans` (null for the top span `request <id>`), `notes` when
there is something to say (the server sent no trace of it).
"""

from __future__ import annotations

from typing import Any

from app.inference.tracing.spans import RequestTrace


def trace_record(trace: RequestTrace) -> dict[str, Any]:
    origin = trace.start_ns
    record: dict[str, Any] = {
        "trace_id": trace.trace_id,
        "clock": trace.clock,
        "spans": [
            {
                "name": span.name,
                "model": span.model,
                "start_ms": round((span.start_ns - origin) / 1e6, 3),
                "end_ms": round((span.end_ns - origin) / 1e6, 3),
                "parent": span.parent,
            }
            for span in trace.spans
        ],
    }
    if trace.notes:
        record["notes"] = list(trace.notes)
    return record
