"""Where the time goes on the server: Triton's statistics extension, read twice.

`get_inference_statistics` gives cumulative counts and nanoseconds per model version
(success, queue, compute_input, compute_infer, compute_output). The difference of two
reads divided by the requests in between is the mean per request over that interval, the
way perf_analyzer reports its server-side split. It works on any Triton server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PHASES = ("queue", "compute_input", "compute_infer", "compute_output")


@dataclass(frozen=True)
class ServerCounters:
    """Cumulative figures of one model (all versions summed)."""

    requests: int  # successful inference requests (a batched request counts once)
    executions: int  # model executions (the server's own batches)
    inferences: int  # images (batch elements) inferred
    success_ns: int
    phase_ns: tuple[int, int, int, int]  # PHASES order


@dataclass(frozen=True)
class ServerSplit:
    """Means per request over an interval, in milliseconds."""

    requests: int
    queue_ms: float
    compute_input_ms: float
    compute_infer_ms: float
    compute_output_ms: float
    total_ms: float  # success time per request: queue + compute + the server's own overhead
    batch_size: float  # images per model execution (dynamic + client batching)
    executions: int = 0  # model executions in the interval (the server's batches)
    executions_per_s: float | None = None  # when the interval's length was given

    @property
    def compute_ms(self) -> float:
        return self.compute_input_ms + self.compute_infer_ms + self.compute_output_ms

    def to_record(self) -> dict[str, float | None]:
        return {
            "server_queue_ms": round(self.queue_ms, 3),
            "server_compute_input_ms": round(self.compute_input_ms, 3),
            "server_compute_infer_ms": round(self.compute_infer_ms, 3),
            "server_compute_output_ms": round(self.compute_output_ms, 3),
            **self.batcher_record(),
        }

    def batcher_record(self) -> dict[str, float | None]:
        """What the server's batcher did: images per execution (1.0: no batching happened) and
        executions per second (None without the interval's length)."""
        return {
            "server_avg_batch": round(self.batch_size, 3),
            "server_executions_per_s": None
            if self.executions_per_s is None
            else round(self.executions_per_s, 2),
        }


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def parse_counters(statistics: Mapping[str, Any], model: str) -> ServerCounters:
    """From tritonclient's `get_inference_statistics(..., as_json=True)` (int64 as strings)."""
    requests = executions = inferences = success = 0
    phases = [0, 0, 0, 0]
    for entry in statistics.get("model_stats", []) or []:
        if entry.get("name") != model:
            continue
        stats = entry.get("inference_stats", {}) or {}
        requests += _int((stats.get("success") or {}).get("count"))
        success += _int((stats.get("success") or {}).get("ns"))
        for i, phase in enumerate(PHASES):
            phases[i] += _int((stats.get(phase) or {}).get("ns"))
        executions += _int(entry.get("execution_count"))
        inferences += _int(entry.get("inference_count"))
    return ServerCounters(
        requests, executions, inferences, success, (phases[0], phases[1], phases[2], phases[3])
    )


def split(before: ServerCounters, after: ServerCounters, seconds: float | None = None) -> ServerSplit | None:
    """Means per request between two reads `seconds` apart; None when no request finished in
    between. The average batch is images / executions: 4.0 means the server ran the model
    once for every 4 images (its dynamic batcher, client batches, or both)."""
    n = after.requests - before.requests
    if n <= 0:
        return None
    ms = [(a - b) / n / 1e6 for a, b in zip(after.phase_ns, before.phase_ns, strict=True)]
    executions = after.executions - before.executions
    images = after.inferences - before.inferences
    return ServerSplit(
        requests=n,
        queue_ms=ms[0],
        compute_input_ms=ms[1],
        compute_infer_ms=ms[2],
        compute_output_ms=ms[3],
        total_ms=(after.success_ns - before.success_ns) / n / 1e6,
        batch_size=images / executions if executions > 0 else 0.0,
        executions=executions,
        executions_per_s=executions / seconds if seconds and seconds > 0 else None,
    )
