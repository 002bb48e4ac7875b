"""A traced request as the rows of a waterfall: what the viewer's X-ray view paints (Qt-free).

One row per span, in the tree's order (each span after its parent, siblings by start), with
its depth, its offset and length in milliseconds from the request's start, and its label;
between two top-level stages, a time no stage accounts for is a row of its own, named
("3.1 ms unaccounted before decode outputs"); the wait for a slot says how full the window
was ("waited 31.0 ms for a free slot: in flight 2 of 2").
"""

from __future__ import annotations

from dataclasses import dataclass

from app.inference.tracing.diagnosis import label
from app.inference.tracing.spans import RequestTrace

MIN_GAP_MS = 0.5


@dataclass(frozen=True)
class Row:
    depth: int
    name: str
    model: str
    kind: str  # "client", "server", "network" or "gap"
    start_ms: float
    ms: float
    label: str

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.ms


def rows(trace: RequestTrace, min_gap_ms: float = MIN_GAP_MS) -> list[Row]:
    origin = trace.top.start_ns
    children: dict[int | None, list[int]] = {}
    for index, span in enumerate(trace.spans):
        children.setdefault(span.parent, []).append(index)
    for kids in children.values():
        kids.sort(key=lambda i: (trace.spans[i].start_ns, -trace.spans[i].end_ns))
    out: list[Row] = []

    def visit(index: int, depth: int) -> None:
        span = trace.spans[index]
        text = f"request {trace.request_id}: {span.duration_ms:.1f} ms" if index == 0 else label(trace, span)
        out.append(
            Row(
                depth,
                span.name,
                span.model,
                span.kind.value,
                (span.start_ns - origin) / 1e6,
                span.duration_ms,
                text,
            )
        )
        cursor = span.start_ns
        for child in children.get(index, []):
            kid = trace.spans[child]
            gap = (kid.start_ns - cursor) / 1e6
            if index == 0 and gap >= min_gap_ms:
                out.append(
                    Row(
                        depth + 1,
                        "gap",
                        "",
                        "gap",
                        (cursor - origin) / 1e6,
                        gap,
                        f"{gap:.1f} ms unaccounted before {kid.name}",
                    )
                )
            visit(child, depth + 1)
            cursor = max(cursor, kid.end_ns)

    if trace.spans:
        visit(0, 0)
    return out
