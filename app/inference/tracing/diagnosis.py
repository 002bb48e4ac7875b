"""Where one traced request's time went, in words: the findings of the troubleshooting table
(a client-bound in-flight window, queueing on the server, a slow callback or GUI
hand-over, a network share larger than the compute, a retry, a heavy pre-processing),
biggest first, each with what to do about it. Qt-free: the viewer's X-ray view and the
command line print the same sentences.

`facts` the client records with a traced request (RequestTrace.facts): `in_flight` and
`window` when it waited for a slot, `attempts` and `retry_reason` after a retry,
`network_ms` (the client's window less the server's part, spans.build_trace).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from app.inference.tracing import spans as names
from app.inference.tracing.spans import RequestTrace, Span, SpanKind

# A finding counts when it takes at least this share of the request and this many ms.
MIN_SHARE = 0.2
MIN_MS = 1.0
# The guide's Tune page: instances and dynamic batching.
TUNE_HINT = "raise the model's instances or turn on dynamic batching (Tune: `triton-viewer tune`)"


class Finding(enum.StrEnum):
    WINDOW_FULL = "window full"
    SERVER_QUEUE = "server queue"
    SLOW_CALLBACK = "slow callback"
    NETWORK = "network"
    RETRY = "retry"
    PREPROCESS = "pre-processing"
    COMPUTE = "compute"  # nothing to fix on the client: the model is the time
    NO_SERVER = "no server trace"


@dataclass(frozen=True)
class Diagnosis:
    finding: Finding
    ms: float  # the time it accounts for
    message: str  # one sentence, with the figures
    advice: str = ""

    def text(self) -> str:
        return f"{self.message}: {self.advice}" if self.advice else self.message


@dataclass(frozen=True)
class Part:
    """One piece of the request's timeline, in order: a stage or a gap between two."""

    name: str
    start_ms: float  # from the request's start
    ms: float
    kind: str  # "client", "server", "network" or "gap"
    label: str  # for the waterfall: "waited 31.0 ms for a free slot: in flight 2 of 2"


def _sum(spans: list[Span]) -> float:
    return sum(s.duration_ms for s in spans)


def _server_own(trace: RequestTrace, name: str) -> float:
    """A phase of the request's own server part (not its pipeline stages')."""
    server = next((i for i, s in enumerate(trace.spans) if s.name == names.SERVER), None)
    return _sum([s for s in trace.spans if s.name == name and s.parent == server])


def compute_ms(trace: RequestTrace) -> float:
    return sum(
        _server_own(trace, n) for n in (names.COMPUTE_INPUT, names.COMPUTE_INFER, names.COMPUTE_OUTPUT)
    )


def _slot_label(trace: RequestTrace, ms: float) -> str:
    in_flight, window = trace.facts.get("in_flight"), trace.facts.get("window")
    where = f": in flight {in_flight} of {window}" if in_flight is not None and window else ""
    return f"waited {ms:.1f} ms for a free slot{where}"


def label(trace: RequestTrace, span: Span) -> str:
    """A stage as the waterfall names it."""
    ms = span.duration_ms
    if span.name == names.SLOT_WAIT:
        return _slot_label(trace, ms)
    if span.name == names.QUEUE:
        return f"queued {ms:.1f} ms on the server ({span.model})"
    if span.name == names.RETRY_WAIT:
        reason = trace.facts.get("retry_reason")
        return f"waited {ms:.1f} ms before retrying" + (f" (after {reason})" if reason else "")
    if span.name == names.NETWORK_OUT:
        return f"{ms:.1f} ms on the way to the server"
    return f"{span.name} {ms:.1f} ms" + (f" ({span.model})" if span.kind is SpanKind.SERVER else "")


def _timeline(trace: RequestTrace, parent: int) -> list[tuple[int, Span]]:
    return sorted(
        ((i, s) for i, s in enumerate(trace.spans) if s.parent == parent),
        key=lambda item: (item[1].start_ns, -item[1].end_ns),
    )


def breakdown(trace: RequestTrace, min_gap_ms: float = 0.5) -> list[Part]:
    """The request's timeline: its stages in order (`in flight` opened up into the way to
    the server, the server's part and the way back), and the gaps between them (time no
    stage accounts for: a thread's hand-off, the GIL) named by what they precede."""
    origin = trace.top.start_ns
    parts: list[Part] = []

    def gap(start: int, end: int, what: str) -> None:
        ms = (end - start) / 1e6
        if ms >= min_gap_ms:
            parts.append(Part("gap", (start - origin) / 1e6, ms, "gap", what.format(ms=ms)))

    def add(span: Span) -> None:
        parts.append(
            Part(
                span.name,
                (span.start_ns - origin) / 1e6,
                span.duration_ms,
                span.kind.value,
                label(trace, span),
            )
        )

    cursor = origin
    for index, span in _timeline(trace, 0):
        gap(cursor, span.start_ns, f"{{ms:.1f}} ms unaccounted before {span.name}")
        inside = _timeline(trace, index) if span.name == names.IN_FLIGHT else []
        if not inside:
            add(span)
        else:
            inner = span.start_ns
            for _, child in inside:
                gap(inner, child.start_ns, f"{{ms:.1f}} ms in flight before {child.name}")
                add(child)
                inner = max(inner, child.end_ns)
            gap(inner, span.end_ns, "{ms:.1f} ms for the reply to reach the client")
        cursor = max(cursor, span.end_ns)
    gap(cursor, trace.top.end_ns, "{ms:.1f} ms unaccounted at the end")
    return parts


def diagnose(trace: RequestTrace) -> list[Diagnosis]:
    """The findings that take a real share of the request, biggest first; one finding at
    least (the compute, when nothing else stands out)."""
    total = max(trace.duration_ms, 1e-9)
    compute = compute_ms(trace)
    found: list[Diagnosis] = []

    def worth(ms: float) -> bool:
        return ms >= MIN_MS and ms / total >= MIN_SHARE

    waited = _sum(trace.named(names.SLOT_WAIT)) + _sum(trace.named(names.BATCH_WAIT))
    queue = _server_own(trace, names.QUEUE)
    if worth(waited):
        # A full window over a queueing server: the server is the limit, more in flight
        # would only queue longer there. Over an idle one: the client is.
        advice = (
            "the server is the limit (it queues the requests already in flight): more in flight "
            "would queue longer there"
            if worth(queue)
            else "the client is the limit: raise the requests in flight (--concurrency), the server has room"
        )
        found.append(Diagnosis(Finding.WINDOW_FULL, waited, _slot_label(trace, waited), advice))
    if worth(queue):
        found.append(
            Diagnosis(
                Finding.SERVER_QUEUE,
                queue,
                f"queued {queue:.1f} ms on the server before its {compute:.1f} ms of compute",
                TUNE_HINT,
            )
        )
    slow = (
        _sum(trace.named(names.CALLBACK)) + _sum(trace.named(names.HANDOVER)) + _sum(trace.named(names.PAINT))
    )
    if worth(slow):
        found.append(
            Diagnosis(
                Finding.SLOW_CALLBACK,
                slow,
                f"{slow:.1f} ms from the reply to the screen (callback, hand-over to the GUI, paint)",
                "the GUI thread is busy: fewer overlays, a smaller view, or a lower frame rate",
            )
        )
    network = float(trace.facts.get("network_ms", 0.0) or 0.0)
    if network > compute and worth(network):
        found.append(
            Diagnosis(
                Finding.NETWORK,
                network,
                f"the network (both ways) took {network:.1f} ms, more than the {compute:.1f} ms of compute",
                "send smaller tensors (resize on the client), or shared memory when the server is on "
                "this machine",
            )
        )
    retried = _sum(trace.named(names.RETRY_WAIT)) + _sum(trace.named(names.ATTEMPT)[:-1])
    attempts = int(trace.facts.get("attempts", 1) or 1)
    if attempts > 1:
        reason = trace.facts.get("retry_reason")
        found.append(
            Diagnosis(
                Finding.RETRY,
                retried,
                f"retried {attempts - 1} time{'s' if attempts > 2 else ''}"
                + (f" after {reason}" if reason else "")
                + f": {retried:.1f} ms of the request",
                "the server failed or was unreachable: see its log",
            )
        )
    prep = _sum(trace.named(names.PREPROCESS)) + _sum(trace.named(names.READ))
    if prep > compute and worth(prep):
        found.append(
            Diagnosis(
                Finding.PREPROCESS,
                prep,
                f"reading and pre-processing took {prep:.1f} ms, more than the {compute:.1f} ms of compute",
                "a smaller input size, or the pre-processing moved to the server",
            )
        )
    found.sort(key=lambda d: -d.ms)
    if not trace.has_server():
        found.append(
            Diagnosis(
                Finding.NO_SERVER,
                0.0,
                "the server sent no trace of this request",
                "its time on the server is not split (tracing off there, or not Triton)",
            )
        )
    elif not found:
        found.append(
            Diagnosis(
                Finding.COMPUTE,
                compute,
                f"the model's compute is most of it: {compute:.1f} of {total:.1f} ms",
                "a faster model, a GPU, or batching (Tune) to serve more per second",
            )
        )
    return found
