"""The pure parts of the server tune: settings lists, trial configs, the Pareto front, the
recommendation; config.pbtxt/JSON through Triton's schema; the metrics parser and history."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from app.inference.introspection.metrics_history import MetricsHistory, summary_of
from app.inference.introspection.model_config import ConfigError, parse_config, to_pbtxt
from app.inference.introspection.server_metrics import (
    MetricsReader,
    default_metrics_url,
    metrics_url,
    parse_metrics,
)
from app.inference.introspection.server_stats import ServerCounters, split
from app.inference.protocol import parse_url
from app.pipeline.sweep import LevelResult
from app.pipeline.tune_analysis import TrialResult, pareto_front, recommend
from app.pipeline.tune_settings import (
    TRIAL_MARK,
    TrialSettings,
    apply_settings,
    parse_delay_list,
    parse_int_list,
    settings_of,
    trial_mark_of,
    trial_settings,
    without_mark,
)

FIXED_COST = Path(__file__).resolve().parents[1] / "models" / "fixed_cost" / "config.pbtxt"


def config() -> dict:
    return parse_config(FIXED_COST.read_text(), str(FIXED_COST))


def level(c: int, throughput: float, p95: float, failed: int = 0) -> LevelResult:
    return LevelResult(c, "grpc", 1, throughput, p95 / 2, p95, p95 * 1.1, failed, 1.0, 2.0)


# -- config text ---------------------------------------------------------------
def test_config_pbtxt_round_trip_through_tritons_schema() -> None:
    original = config()
    text = to_pbtxt(original)
    message = text_format.Parse(text, model_config_pb2.ModelConfig())
    assert message.max_batch_size == 16 and message.instance_group[0].count == 1
    assert parse_config(text) == original
    assert parse_config('{"config": {"max_batch_size": 16}}') == {"max_batch_size": 16}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_batch_size: x\n", "cfg:1:"),  # pbtxt: file, line and column
        ('{"max_batch_size": 1,', "not valid JSON"),
        ('{"foo": 1}', 'no field named "foo"'),
    ],
)
def test_a_bad_config_names_the_source_and_the_cause(text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match="cfg") as error:
        parse_config(text, "cfg")
    assert expected in str(error.value)


# -- settings ------------------------------------------------------------------
def test_settings_of_a_config_and_default_lists() -> None:
    current = settings_of(config())
    assert current == TrialSettings(1, 16, None)
    trials = trial_settings(current)
    assert trials[0] == current, "the original is measured first"
    assert set(trials) == {TrialSettings(i, 16, d) for i in (1, 2) for d in (None, 0, 2000)}
    assert len(trials) == len(set(trials))


def test_lists_that_cannot_apply_are_refused() -> None:
    no_batch = TrialSettings(1, 0, None)
    assert trial_settings(no_batch) == [no_batch, TrialSettings(2, 0, None)], "instances only"
    with pytest.raises(ValueError, match="max_batch_size 0"):
        trial_settings(no_batch, queue_delays=[0])
    with pytest.raises(ValueError, match="batch dimension"):
        trial_settings(TrialSettings(1, 8, None), max_batches=[0])
    assert parse_delay_list("off,0,2000,off") == [None, 0, 2000]
    with pytest.raises(ValueError, match="--queue-delay-us"):
        parse_delay_list("fast")
    with pytest.raises(ValueError, match="out of range"):
        parse_int_list("0,2", "--instances", 1, 64)


def test_apply_settings_changes_those_and_nothing_else() -> None:
    original = config()
    trial = apply_settings(original, TrialSettings(3, 8, 500), mark="pid 1")
    assert settings_of(trial) == TrialSettings(3, 8, 500)
    assert trial_mark_of(trial) == "pid 1"
    for key in ("input", "output", "backend"):
        assert trial[key] == original[key]
    assert trial["parameters"]["execution_ms"] == original["parameters"]["execution_ms"]
    clean = without_mark(trial)
    assert trial_mark_of(clean) is None and TRIAL_MARK not in clean.get("parameters", {})
    back = apply_settings(trial, TrialSettings(1, 16, None))
    assert "dynamic_batching" not in back
    assert without_mark(back) == original


def test_preferred_batch_sizes_above_a_smaller_max_batch_are_dropped() -> None:
    base = {**config(), "dynamic_batching": {"preferred_batch_size": [4, 16]}}
    assert apply_settings(base, TrialSettings(1, 8, 0))["dynamic_batching"]["preferred_batch_size"] == [4]


# -- analysis ------------------------------------------------------------------
def test_pareto_front_and_recommendation_with_speedup_at_the_same_load() -> None:
    original = TrialResult(TrialSettings(1, 16, None), True, [level(1, 50, 20), level(16, 50, 320)])
    batching = TrialResult(TrialSettings(1, 16, 2000), False, [level(1, 45, 25), level(16, 600, 40)])
    failing = TrialResult(TrialSettings(2, 16, 0), False, [level(16, 900, 10, failed=3)])
    refused = TrialResult(TrialSettings(4, 16, 0), False, error="the server said no")
    trials = [original, batching, failing, refused]
    front = pareto_front(trials)
    assert [(p.settings, p.level.concurrency) for p in front] == [
        (original.settings, 1),
        (batching.settings, 16),
    ], "the level with failed requests is not a candidate; (1, 45 req/s, 25 ms) is dominated"
    rec, _ = recommend(trials, None)
    assert rec is not None and rec.settings == batching.settings and rec.level.concurrency == 16
    assert rec.speedup == pytest.approx(12.0)
    within, _ = recommend(trials, 22.0)
    assert within is not None and within.settings == original.settings and within.speedup == 1.0
    none, reason = recommend(trials, 5.0)
    assert none is None and "5 ms" in reason


# -- batcher figures -----------------------------------------------------------
def test_average_batch_and_executions_per_second_from_the_statistics() -> None:
    before = ServerCounters(10, 10, 10, 0, (0, 0, 0, 0))
    after = ServerCounters(50, 20, 50, 40 * 10**6, (0, 0, 40 * 10**6, 0))
    s = split(before, after, seconds=2.0)
    assert s is not None
    assert s.batch_size == 4.0 and s.executions_per_s == 5.0
    record = s.to_record()
    assert record["server_avg_batch"] == 4.0 and record["server_executions_per_s"] == 5.0


# -- metrics -------------------------------------------------------------------
METRICS = """\
# HELP nv_inference_pending_request_count Instantaneous number of pending requests.
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="a",version="1"} 3
nv_inference_pending_request_count{model="a",version="2"} 1
nv_inference_pending_request_count{model="b",version="1"} 0
# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]
# TYPE nv_cpu_utilization gauge
nv_cpu_utilization 0.25
# TYPE nv_cpu_memory_used_bytes gauge
nv_cpu_memory_used_bytes 1000
# TYPE nv_cpu_memory_total_bytes gauge
nv_cpu_memory_total_bytes 4000
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5
# TYPE nv_gpu_power_usage gauge
nv_gpu_power_usage{gpu_uuid="GPU-1"} 70.5
# TYPE nv_gpu_memory_used_bytes gauge
nv_gpu_memory_used_bytes{gpu_uuid="GPU-1"} 2048
"""


def test_metrics_page_parsed_by_prometheus_parser() -> None:
    s = parse_metrics(METRICS, "u", read_at=100.0)
    assert s.reachable and s.pending_requests == {"a": 4.0, "b": 0.0} and s.total_pending == 4.0
    assert (s.cpu_utilization, s.cpu_memory_used_bytes, s.cpu_memory_total_bytes) == (0.25, 1000, 4000)
    assert len(s.gpus) == 1
    gpu = s.gpus[0]
    assert (gpu.gpu, gpu.utilization, gpu.power_watts, gpu.memory_used_bytes) == ("GPU-1", 0.5, 70.5, 2048)
    assert gpu.memory_total_bytes is None
    cpu_only = parse_metrics("nv_cpu_utilization 0.1\n")
    assert cpu_only.gpus == () and cpu_only.pending_requests == {}


def test_metrics_history_series_skip_unreachable_and_unreported() -> None:
    history = MetricsHistory(capacity=3)
    history.add(parse_metrics(METRICS, read_at=10.0))
    history.add(MetricsReader("127.0.0.1:9").read())  # nothing listens on port 9
    history.add(parse_metrics("nv_cpu_utilization 0.75\n", read_at=12.0))
    history.add(parse_metrics("nv_cpu_utilization 0.5\n", read_at=13.0))
    assert len(history) == 3, "the oldest dropped"
    assert history.series("cpu_utilization", now=15.0) == [(3.0, 0.75), (2.0, 0.5)]
    assert history.series("gpu_power_watts", now=15.0) == []
    assert not history.reports_gpu()


def test_metrics_urls() -> None:
    assert metrics_url("host:8002") == "http://host:8002/metrics"
    assert metrics_url("https://host:9/custom") == "https://host:9/custom"
    assert (
        default_metrics_url(parse_url("grpc://triton.example:8001")) == "http://triton.example:8002/metrics"
    )
    assert default_metrics_url(parse_url("10.0.0.5:8001")) == "http://10.0.0.5:8002/metrics"
    closed = MetricsReader("127.0.0.1:9").read()
    assert not closed.reachable and closed.state.startswith("not reachable: http://127.0.0.1:9/metrics")


def test_summary_of_an_interval() -> None:
    history = MetricsHistory()
    history.add(parse_metrics(METRICS, read_at=10.0))
    history.add(parse_metrics("nv_cpu_utilization 0.75\nnv_cpu_memory_used_bytes 3000\n", read_at=11.0))
    history.add(parse_metrics("nv_cpu_utilization 0.5\n", read_at=20.0))
    figures = summary_of(history.between(9.0, 12.0))
    assert figures is not None
    assert figures["samples"] == 2 and figures["cpu_utilization_mean"] == 0.5
    assert figures["cpu_utilization_max"] == 0.75 and figures["pending_requests_max"] == 4.0
    assert figures["cpu_memory_used_bytes_max"] == 3000 and figures["gpu_utilization_mean"] == 0.5
    assert summary_of(history.between(12.0, 19.0)) is None
    cpu_only = summary_of(history.between(19.0, 21.0))
    assert cpu_only is not None and "gpu_utilization_mean" not in cpu_only
