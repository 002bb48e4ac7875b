"""A pipeline's stages from two reads of Triton's statistics: each stage's share per request
of the pipeline, the records (`models`, absent for a single model), the viewer's rows, the
bench and tune level records; stage counters read and summed through a fake channel."""

from __future__ import annotations

from typing import Any

import pytest

from app.inference.introspection.pipeline import Pipeline, Stage
from app.inference.introspection.server_stats import (
    SETTLE_TRIES,
    ServerCounters,
    read_settled,
    split,
    stages_note,
)
from app.inference.introspection.stage_stats import stage_counters
from app.inference.transports.channel import Headers
from app.pipeline.sweep import LevelResult, stage_notes
from app.pipeline.time_split import stage_rows
from app.pipeline.tune import level_record


def counters(requests: int, queue_ns: int, compute_ns: int, stages: Any = ()) -> ServerCounters:
    """compute_ns split as input 10%, infer 80%, output 10%."""
    phases = (queue_ns, compute_ns // 10, compute_ns * 8 // 10, compute_ns // 10)
    return ServerCounters(requests, requests, requests, queue_ns + compute_ns, phases, stages)


def test_each_stage_is_divided_by_the_pipelines_requests() -> None:
    before = counters(
        10,
        1_000_000,
        100_000_000,
        (("det", counters(10, 0, 40_000_000)), ("marks", counters(25, 5_000_000, 30_000_000))),
    )
    after = counters(
        30,
        3_000_000,
        300_000_000,
        (("det", counters(30, 2_000_000, 120_000_000)), ("marks", counters(65, 9_000_000, 90_000_000))),
    )
    result = split(before, after, 2.0)
    assert result is not None and result.requests == 20
    det, marks = result.stages
    assert (det.model, det.count, det.queue_ms, det.compute_ms) == ("det", 20, 0.1, 4.0)
    # 40 calls of `marks` for 20 requests (two faces each): its time per request of the pipeline.
    assert (marks.model, marks.count) == ("marks", 40)
    assert marks.queue_ms == pytest.approx(0.2) and marks.compute_ms == pytest.approx(3.0)
    record = result.to_record()
    assert record["models"] == {
        "det": {"count": 20, "queue_ms": 0.1, "compute_ms": 4.0},
        "marks": {"count": 40, "queue_ms": 0.2, "compute_ms": 3.0},
    }
    assert list(record["models"]) == ["det", "marks"], "in the pipeline's order"


def test_a_single_model_has_no_models_key() -> None:
    result = split(counters(0, 0, 0), counters(5, 5_000_000, 50_000_000))
    assert result is not None and result.stages == ()
    assert "models" not in result.to_record() and result.models_record() is None


def test_a_stage_missing_from_a_read_or_reloaded_is_left_out() -> None:
    before = counters(0, 0, 0, (("a", counters(50, 0, 0)), ("b", counters(0, 0, 0))))
    after = counters(10, 0, 10_000_000, (("a", counters(3, 0, 1_000_000)), ("c", counters(1, 0, 0))))
    result = split(before, after)
    assert result is not None and result.stages == ()  # a went back (reloaded), c is new, b gone
    assert split(before, counters(0, 0, 0)) is None, "no request of the pipeline: no split at all"


def test_the_viewers_rows_add_up_to_the_pipelines_compute() -> None:
    before = counters(0, 0, 0, (("det", counters(0, 0, 0)), ("marks", counters(0, 0, 0))))
    after = counters(
        10,
        10_000_000,
        200_000_000,
        (("det", counters(10, 1_000_000, 80_000_000)), ("marks", counters(20, 0, 60_000_000))),
    )
    server = split(before, after)
    rows = stage_rows("mesh", server)
    assert [(r.key, r.title) for r in rows] == [
        ("stage", "det"),
        ("stage", "marks"),
        ("outside", "outside the stages"),
        ("total", "mesh in all"),
    ]
    det, marks, outside, total = rows
    assert (det.queue_ms, det.compute_ms, det.calls) == (0.1, 8.0, 1.0)
    assert (marks.queue_ms, marks.compute_ms, marks.calls) == (0.0, 6.0, 2.0)
    assert outside.queue_ms is None and outside.compute_ms == pytest.approx(20.0 - 8.1 - 6.0)
    assert (total.queue_ms, total.compute_ms) == (1.0, 20.0)
    assert stage_rows("face_detector", split(counters(0, 0, 0), counters(4, 0, 4_000_000))) == []
    assert stage_rows("mesh", None) == []


def test_an_ensembles_rest_is_measured_from_its_total() -> None:
    # As Triton 2.51 reports an ensemble (measured): its compute is its steps' compute, its
    # queue only its own; its total (success time) holds the steps' queues too.
    step = counters(10, 67_000_000, 773_000_000)
    ensemble = ServerCounters(
        10, 10, 10, 841_000_000, (30_000, 2_000_000, 765_000_000, 6_000_000), (("det", step),)
    )
    zero = counters(0, 0, 0, (("det", counters(0, 0, 0)),))
    server = split(zero, ensemble)
    assert server is not None
    det, outside, total = stage_rows("ens", server)
    assert (det.queue_ms, det.compute_ms) == (6.7, 77.3)
    assert det.queue_ms + det.compute_ms > server.queue_ms + server.compute_ms, (
        "the steps' queues are outside"
    )
    assert outside.compute_ms == pytest.approx(84.1 - 0.003 - 84.0)
    assert (total.queue_ms, total.compute_ms) == (0.003, 77.3)


def test_bench_and_tune_levels_carry_the_stages_only_for_a_pipeline() -> None:
    models = {"det": {"count": 4, "queue_ms": 0.1, "compute_ms": 8.0}}
    level = LevelResult(1, "grpc", 1, 10.0, 9.0, 12.0, 13.0, 0, 0.5, 20.0, models=models)
    single = LevelResult(1, "grpc", 1, 10.0, 9.0, 12.0, 13.0, 0, 0.5, 20.0)
    assert level.to_record()["models"] == models and "models" not in single.to_record()
    assert level_record(level)["models"] == models and "models" not in level_record(single)
    assert stage_notes([single, level]) == [stages_note(["det"])]
    assert "det" in stages_note(["det"]) and "other clients'" in stages_note(["det"])
    assert stage_notes([single]) == []


class StatsChannel:
    """Only what stage_counters uses: a server's statistics per model, some not loaded."""

    def __init__(self, requests: dict[str, int]) -> None:
        self.requests = requests
        self.asked: list[tuple[str, str]] = []

    def inference_statistics(
        self, model: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        self.asked.append((model, version))
        if model not in self.requests:
            raise RuntimeError(f"Request for unknown model: '{model}' is not found")
        count = str(self.requests[model])
        return {"model_stats": [{"name": model, "inference_stats": {"success": {"count": count}}}]}


def test_stage_counters_are_summed_over_the_servers_and_skip_a_stage_not_there() -> None:
    pipeline = Pipeline("ensemble", (Stage("det", "2"), Stage("marks"), Stage("det", "2")))
    one, two = StatsChannel({"det": 3, "marks": 5}), StatsChannel({"det": 4})
    found = stage_counters([one, two], pipeline, headers={}, timeout_s=1.0)
    assert [(name, c.requests) for name, c in found] == [("det", 7), ("marks", 5)]
    assert one.asked == [("det", "2"), ("marks", "")], "a model used by two steps is read once"
    assert stage_counters([one], None, headers={}, timeout_s=1.0) == ()


def test_reads_again_until_every_call_and_each_stage_is_counted() -> None:
    before = counters(10, 0, 0, (("det", counters(10, 0, 0)),))
    reads = iter(
        [
            counters(29, 0, 0, (("det", counters(29, 0, 0)),)),  # the last call not counted yet
            counters(30, 0, 0, (("det", counters(29, 0, 0)),)),  # its stage not yet
            counters(30, 0, 0, (("det", counters(30, 0, 0)),)),
            counters(31, 0, 0, (("det", counters(31, 0, 0)),)),  # never read: settled before
        ]
    )
    after = read_settled(lambda: next(reads), before, 20)
    assert after is not None and after.requests == 30 and dict(after.stages)["det"].requests == 30


def test_gives_the_last_read_when_the_counts_never_settle() -> None:
    before = counters(0, 0, 0)
    calls: list[int] = []

    def read() -> ServerCounters:
        calls.append(1)
        return counters(3, 0, 0)  # another client's model reloaded, say: 3 of 5 forever

    after = read_settled(read, before, 5)
    assert after is not None and after.requests == 3 and len(calls) == SETTLE_TRIES + 1
    assert read_settled(lambda: None, before, 5) is None
