"""Where the time goes on the server: Triton's statistics extension, read twice.

`get_inference_statistics` gives cumulative counts and nanoseconds per model version
(success, queue, compute_input, compute_infer, compute_output). The difference of two
reads divided by the requests in between is the mean per request over that interval, the
way perf_analyzer reports its server-side split. It works on any Triton server.

A pipeline (an ensemble, or a BLS model that declares its `composing_models`) also has its
stages' counters, read with its own: each stage's time over the same interval, divided by the
pipeline's requests, is what that stage adds to one request of the pipeline. A stage model
keeps one set of statistics whoever calls it, so requests other clients sent to it meanwhile
are counted too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PHASES = ("queue", "compute_input", "compute_infer", "compute_output")
# Triton counts a request in its statistics (and a pipeline's stages) just after its reply is
# sent: read right after the last reply, they may not have it yet (see `read_settled`).
SETTLE_TRIES = 5
SETTLE_WAIT_S = 0.05


@dataclass(frozen=True)
class ServerCounters:
    """Cumulative figures of one model (all versions summed)."""

    requests: int  # successful inference requests (a batched request counts once)
    executions: int  # model executions (the server's own batches)
    inferences: int  # images (batch elements) inferred
    success_ns: int
    phase_ns: tuple[int, int, int, int]  # PHASES order
    # A pipeline's composing models (name, their own counters), read with these; () otherwise.
    stages: tuple[tuple[str, ServerCounters], ...] = ()

    @property
    def compute_ns(self) -> int:
        return self.phase_ns[1] + self.phase_ns[2] + self.phase_ns[3]


@dataclass(frozen=True)
class StageSplit:
    """One stage of a pipeline over an interval: its own requests (a BLS model may call it
    once per face, or batch several crops in one call) and its queue and compute time divided
    by the pipeline's requests, i.e. what it adds to one request of the pipeline."""

    model: str
    count: int
    queue_ms: float
    compute_ms: float

    def to_record(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "queue_ms": round(self.queue_ms, 3),
            "compute_ms": round(self.compute_ms, 3),
        }


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
    stages: tuple[StageSplit, ...] = ()  # a pipeline's stages, in its order; () otherwise

    @property
    def compute_ms(self) -> float:
        return self.compute_input_ms + self.compute_infer_ms + self.compute_output_ms

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "server_queue_ms": round(self.queue_ms, 3),
            "server_compute_input_ms": round(self.compute_input_ms, 3),
            "server_compute_infer_ms": round(self.compute_infer_ms, 3),
            "server_compute_output_ms": round(self.compute_output_ms, 3),
            **self.batcher_record(),
        }
        models = self.models_record()
        if models is not None:
            record["models"] = models
        return record

    def models_record(self) -> dict[str, dict[str, float | int]] | None:
        """{"STAGE": {"count", "queue_ms", "compute_ms"}} of a pipeline, None for one model."""
        return {s.model: s.to_record() for s in self.stages} if self.stages else None

    def batcher_record(self) -> dict[str, float | None]:
        """What the server's batcher did: images per execution (1.0: no batching happened) and
        executions per second (None without the interval's length)."""
        return {
            "server_avg_batch": round(self.batch_size, 3),
            "server_executions_per_s": None
            if self.executions_per_s is None
            else round(self.executions_per_s, 2),
        }


def stages_note(names: Iterable[str]) -> str:
    """What the stages' figures count, said wherever they are shown."""
    return (
        f"the stages' figures ({', '.join(names)}) count every request those models served in "
        "the interval: other clients' and other pipelines' too"
    )


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


def add_counters(a: ServerCounters, b: ServerCounters) -> ServerCounters:
    """The figures of two servers together (stages left out: they are summed on their own)."""
    return ServerCounters(
        a.requests + b.requests,
        a.executions + b.executions,
        a.inferences + b.inferences,
        a.success_ns + b.success_ns,
        (
            a.phase_ns[0] + b.phase_ns[0],
            a.phase_ns[1] + b.phase_ns[1],
            a.phase_ns[2] + b.phase_ns[2],
            a.phase_ns[3] + b.phase_ns[3],
        ),
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
        stages=stage_splits(before.stages, after.stages, n),
    )


def stage_splits(
    before: tuple[tuple[str, ServerCounters], ...],
    after: tuple[tuple[str, ServerCounters], ...],
    requests: int,
) -> tuple[StageSplit, ...]:
    """Each stage's share of `requests` requests of its pipeline, in `after`'s order. A stage
    missing from either read, or whose counters went back (reloaded in between), is left out."""
    earlier = dict(before)
    out = []
    for name, a in after:
        b = earlier.get(name)
        if b is None or a.requests < b.requests:
            continue
        queue_ns = a.phase_ns[0] - b.phase_ns[0]
        out.append(
            StageSplit(
                name,
                a.requests - b.requests,
                queue_ns / requests / 1e6,
                (a.compute_ns - b.compute_ns) / requests / 1e6,
            )
        )
    return tuple(out)


def _settled(server: ServerSplit | None, calls: int) -> bool:
    """The statistics count every one of `calls` answered calls, and each stage as many as its
    pipeline."""
    if server is None:
        return calls == 0
    return server.requests >= calls and all(stage.count >= server.requests for stage in server.stages)


def read_settled(
    read: Callable[[], ServerCounters | None], before: ServerCounters, calls: int
) -> ServerCounters | None:
    """`read()` once, and again after short waits (SETTLE_TRIES x SETTLE_WAIT_S at most) while
    the counters since `before` miss some of the `calls` answered or a stage lags its pipeline.
    The last read is returned either way (None when `read` gave None)."""
    after = read()
    for _ in range(SETTLE_TRIES):
        if after is None or _settled(split(before, after), calls):
            break
        time.sleep(SETTLE_WAIT_S)
        after = read()
    return after
