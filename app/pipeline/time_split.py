"""Where one request's time goes, end to end: the client's own measurements and the server's
statistics put together as consecutive segments (the viewer's stacked bar, the docs)."""

from __future__ import annotations

from dataclasses import dataclass

from app.inference.core.stats import TimingMeans
from app.inference.introspection.server_stats import ServerSplit


@dataclass(frozen=True)
class Segment:
    key: str
    title: str
    ms: float
    explanation: str


def time_segments(client: TimingMeans | None, server: ServerSplit | None) -> list[Segment]:
    """Mean milliseconds per request, in the order they happen. Without the server's figures
    the round trip is one segment; with them it splits into network + (de)serialisation (what
    the server's own clock does not see), server queue and server compute."""
    if client is None:
        return []
    out = [
        Segment("preprocess", "client pre", client.preprocess_ms, "resize, normalise, copy into the tensor"),
        Segment("wait", "client wait", client.wait_ms, "a client batch filling, a free worker, retries"),
    ]
    if server is None:
        whole = "network, serialisation and the server"
        out.append(Segment("round_trip", "round trip", client.round_trip_ms, whole))
    else:
        network = max(0.0, client.round_trip_ms - server.total_ms)
        out += [
            Segment("network", "network + serialisation", network, "round trip minus the server's own time"),
            Segment("queue", "server queue", server.queue_ms, "waiting for a model instance or a batch"),
            Segment(
                "compute",
                "server compute",
                server.compute_ms,
                f"input {server.compute_input_ms:.1f} + infer {server.compute_infer_ms:.1f} + "
                f"output {server.compute_output_ms:.1f} ms",
            ),
        ]
    post = "decode, NMS, boxes to original pixels"
    out.append(Segment("postprocess", "client post", client.postprocess_ms, post))
    return out


@dataclass(frozen=True)
class StageRow:
    """One line of a pipeline's own split: a stage, the time outside its stages, or the whole."""

    key: str  # "stage", "outside" or "total"
    title: str
    queue_ms: float | None  # None: no queue of its own ("outside")
    compute_ms: float
    calls: float | None  # the stage's requests per request of the pipeline
    explanation: str


def stage_rows(model: str, server: ServerSplit | None) -> list[StageRow]:
    """A pipeline's stages per request of the pipeline (each stage's queue and compute over the
    interval divided by the pipeline's requests), the rest of the pipeline's time on the
    server, and its own queue and compute as Triton reports them; [] for a single model.

    A BLS model's compute includes the time it waits for its stages. An ensemble's compute is
    its steps' compute added up, and its queue only its own: its steps' queues are in its
    total. So the rest is measured from the total: the pipeline's own code and calls, the
    scheduling between steps, the server's overhead."""
    if server is None or not server.stages:
        return []
    rows = [
        StageRow(
            "stage",
            s.model,
            s.queue_ms,
            s.compute_ms,
            s.count / server.requests,
            f"{s.count} requests to {s.model} for {server.requests} to {model}",
        )
        for s in server.stages
    ]
    inside = sum(s.queue_ms + s.compute_ms for s in server.stages)
    rows.append(
        StageRow(
            "outside",
            "outside the stages",
            None,
            max(0.0, server.total_ms - server.queue_ms - inside),
            None,
            f"the rest of {model}'s time on the server: its own code and calls (a BLS model), "
            "the scheduling between steps (an ensemble), the server's overhead",
        )
    )
    rows.append(
        StageRow(
            "total",
            f"{model} in all",
            server.queue_ms,
            server.compute_ms,
            None,
            f"{model}'s queue and compute as Triton reports them: a BLS model's compute includes "
            "its stages; an ensemble's is its steps' compute, their queues left out",
        )
    )
    return rows
