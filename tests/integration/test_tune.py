"""The server tune against the real server, on fixed_cost (a fixed cost per execution, like a
GPU; one instance and no dynamic batching in its own config): it finds dynamic batching and
reports the speedup; the original config is back after a normal end, an error, Ctrl-C and
SIGTERM; a trial config left by a killed tune is noticed; the written config.pbtxt parses
with Triton's schema and loads; a refused trial is named and the others still run.

The session's server is shared: each test checks (and so leaves) the original config."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from app.inference.core.spec import Limits, SessionSpec
from app.inference.introspection.metrics_history import MetricsHistory, MetricsPoller
from app.inference.introspection.model_config import parse_config
from app.inference.introspection.repository import RepositoryControl
from app.inference.introspection.server_metrics import MetricsReader
from app.inference.protocol import parse_endpoints, parse_url
from app.pipeline.sweep import Sweep, SweepPlan
from app.pipeline.tune import TuneError, TunePhase, TunePlan, Tuner
from app.pipeline.tune_export import write_model_config
from app.pipeline.tune_settings import TrialSettings, apply_settings, settings_of, trial_mark_of
from app.server.embedded import EmbeddedServer
from tests.strict_json import strict_loads

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MODEL = "fixed_cost"
ORIGINAL = TrialSettings(1, 16, None)
BATCHING = TrialSettings(1, 16, 2000)


@pytest.fixture
def repository(triton: EmbeddedServer) -> Iterator[RepositoryControl]:
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        original = control.config(MODEL)
        assert settings_of(original) == ORIGINAL
        yield control
        if control.config(MODEL) != original:  # a failed test must not spoil the others
            control.reload_from_files(MODEL)


@pytest.fixture
def images(tmp_path: Path) -> list[np.ndarray]:
    return [np.full((48, 64, 3), 30 * i, np.uint8) for i in range(4)]


def tuner(repository: RepositoryControl, images: list[np.ndarray], levels: tuple[int, ...], **kw) -> Tuner:  # type: ignore[no-untyped-def]
    sweep_plan = SweepPlan(levels=levels, requests=48, warmup=8)
    plan = TunePlan(sweep_plan, instances=(1,), queue_delays=(None, 2000))

    def new_sweep(model: str, on_progress) -> Sweep:  # type: ignore[no-untyped-def]
        spec = SessionSpec(
            endpoints=parse_endpoints(repository.url), model=model, limits=Limits(decode_workers=1)
        )
        return Sweep(spec, images, sweep_plan, on_progress=on_progress)

    return Tuner(repository, MODEL, plan, new_sweep, **kw)


def test_tune_finds_dynamic_batching_reports_the_speedup_and_restores(
    repository: RepositoryControl, images: list[np.ndarray], tmp_path: Path, triton: EmbeddedServer
) -> None:
    metrics_port = triton.metrics_port
    original = repository.config(MODEL)
    progress = []
    history = MetricsHistory()
    with MetricsPoller(MetricsReader(f"127.0.0.1:{metrics_port}"), history, interval_s=0.2):
        result = tuner(repository, images, (1, 8), on_progress=progress.append, metrics=history).run()
    assert repository.config(MODEL) == original, "the original config is back"
    figures = result.trials[1].server_metrics
    assert figures is not None and figures["samples"] and figures["cpu_utilization_mean"] is not None

    assert [t.settings for t in result.trials] == [ORIGINAL, BATCHING]
    assert result.trials[0].original and result.trials[0].load_seconds is None, "measured as found"
    assert all(t.error is None and len(t.levels) == 2 for t in result.trials)
    assert {lv.server_avg_batch for lv in result.trials[0].levels} == {1.0}, "no batching: 1 per execution"
    assert max(lv.server_avg_batch or 0 for lv in result.trials[1].levels) > 1, "the batcher formed batches"
    rec = result.recommendation
    assert rec is not None and rec.settings == BATCHING and rec.level.concurrency == 8
    assert rec.original_level is not None and rec.original_level.concurrency == 8
    assert rec.speedup == rec.level.throughput / rec.original_level.throughput and rec.speedup > 1
    assert result.pareto and any(p.level is rec.level for p in result.pareto)
    assert {p.phase for p in progress} == set(TunePhase)
    assert progress[-1].done_requests == progress[-1].total_requests

    record = json.loads(json.dumps(result.to_record()))
    assert {"model", "original", "trials", "pareto", "recommendation"} <= set(record)
    assert record["recommendation"]["settings"] == {
        "instances": 1,
        "max_batch_size": 16,
        "max_queue_delay_us": 2000,
    }
    level_keys = "concurrency throughput p50_ms p95_ms p99_ms server_queue_ms server_compute_ms avg_batch"
    assert set(record["trials"][1]["levels"][0]) >= set(level_keys.split())

    path = write_model_config(tmp_path, result)
    assert path == tmp_path / MODEL / "config.pbtxt"
    message = text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())
    assert message.dynamic_batching.max_queue_delay_microseconds == 2000
    assert message.max_batch_size == 16 and message.instance_group[0].count == 1
    assert dict(message.parameters)["execution_ms"].string_value == "20", "the rest as it was"
    written = parse_config(path.read_text())
    assert trial_mark_of(written) is None
    assert apply_settings(written, ORIGINAL) == apply_settings(original, ORIGINAL), "only the settings differ"
    repository.load(MODEL, written)
    try:
        assert settings_of(repository.config(MODEL)) == BATCHING
    finally:
        repository.load(MODEL, original)


def test_an_error_during_the_tune_restores_the_original_config(
    repository: RepositoryControl, images: list[np.ndarray]
) -> None:
    original = repository.config(MODEL)
    seen = []

    def fail_after_the_trial(trial) -> None:  # type: ignore[no-untyped-def]
        seen.append(settings_of(repository.config(MODEL)))
        if not trial.original:
            raise RuntimeError("the caller broke")

    with pytest.raises(RuntimeError, match="the caller broke"):
        tuner(repository, images, (1,), on_trial=fail_after_the_trial).run()
    assert seen == [ORIGINAL, BATCHING], "the error came while the trial config was on"
    assert repository.config(MODEL) == original


def test_a_trial_config_left_by_a_killed_tune_is_noticed_and_replaced(
    repository: RepositoryControl, images: list[np.ndarray]
) -> None:
    original = repository.config(MODEL)
    repository.load(MODEL, apply_settings(original, TrialSettings(2, 16, 0), mark="pid 1, earlier"))
    notes: list[str] = []
    t = tuner(repository, images, (1,), on_note=notes.append)
    trials = t.prepare()
    assert any("left by an earlier tune (pid 1, earlier)" in n for n in notes), notes
    assert trials[0] == ORIGINAL, "the original is the repository's, not the leftover trial's"
    assert t.original_config == original
    assert trial_mark_of(repository.config(MODEL)) == t.mark  # this tune's from its prepare on
    t.restore()
    assert repository.config(MODEL) == original


def _marked(original: dict, mark: str) -> dict:  # type: ignore[type-arg]
    return apply_settings(original, TrialSettings(2, 16, 0), mark=mark)


def test_a_live_tunes_trial_config_is_never_left_over_a_second_tune_is_refused(
    repository: RepositoryControl, images: list[np.ndarray]
) -> None:
    """Two tunes of one model on one server: the second is refused, named, and touches nothing
    (it used to call the first's live trial "left by an earlier tune" and reload the model)."""
    original = repository.config(MODEL)
    first = tuner(repository, images, (1,))
    first.prepare()
    second = tuner(repository, images, (1,))
    with pytest.raises(
        TuneError, match=r"being tuned on this server by another tune right now \(pid \d+, start"
    ):
        second.prepare()
    assert trial_mark_of(repository.config(MODEL)) == first.mark  # untouched
    first.restore()
    assert repository.config(MODEL) == original


def test_a_dead_owners_mark_is_left_over_another_machines_is_refused(
    repository: RepositoryControl, images: list[np.ndarray]
) -> None:
    original = repository.config(MODEL)
    # A running pid (this process) with another start time: the pid was reused, its tune is gone.
    mark = f"pid {os.getpid()}, start 1, host {socket.gethostname()}, 2026-01-01 00:00:00, tune 1"
    repository.load(MODEL, _marked(original, mark))
    notes: list[str] = []
    t = tuner(repository, images, (1,), on_note=notes.append)
    assert t.prepare()[0] == ORIGINAL
    assert any("left by an earlier tune" in n and mark in n for n in notes), notes
    t.restore()
    assert repository.config(MODEL) == original
    elsewhere = "pid 4242, start 99, host gpu-box-7, 2026-01-01 00:00:00, tune 1"
    repository.load(MODEL, _marked(original, elsewhere))
    with pytest.raises(TuneError, match=r"a tune on gpu-box-7 .* cannot tell is still running"):
        tuner(repository, images, (1,)).prepare()
    assert trial_mark_of(repository.config(MODEL)) == elsewhere
    repository.reload_from_files(MODEL)


def test_a_tune_whose_config_another_replaced_stops_and_restores_nothing(
    repository: RepositoryControl, images: list[np.ndarray]
) -> None:
    original = repository.config(MODEL)
    t = tuner(repository, images, (1,))
    t.prepare()
    intruder = tuner(repository, images, (1,)).mark  # a live tune of this process
    repository.load(MODEL, _marked(original, intruder))
    with pytest.raises(TuneError, match="another tune of 'fixed_cost' loaded its own config"):
        t.run()
    assert trial_mark_of(repository.config(MODEL)) == intruder  # not "restored" under the other
    repository.reload_from_files(MODEL)
    assert repository.config(MODEL) == original


def tune_cli(url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "app", "tune", "--url", url, "--model", MODEL, "--timeout", "60", *extra]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_trial_restores_the_original_config(
    repository: RepositoryControl, tmp_path: Path, sig: signal.Signals
) -> None:
    original = repository.config(MODEL)
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), np.full((48, 64, 3), 90, np.uint8))
    # One request in flight and a half-second queue delay: the trial waits ~0.5 s per request
    # for a batch that never fills, so it is still measuring when the signal comes.
    argv = tune_cli(
        repository.url, "--image", str(image), "--instances", "1", "--queue-delay-us", "off,500000"
    )
    argv += ["--concurrency", "1", "--requests", "40", "--output", str(tmp_path / "t.json")]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "trial 2/2" in line and "in flight" in line:  # the trial config is on, measuring
                break
        assert settings_of(repository.config(MODEL)) == TrialSettings(1, 16, 500000), "".join(seen)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):  # also when it timed out: no pipe left to the GC
            if pipe is not None:
                pipe.close()
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted" in stderr and "was restored" in stderr
    assert repository.config(MODEL) == original
    record = strict_loads((tmp_path / "t.json").read_text())
    assert record["interrupted"] is True and record["trials"][0]["original"] is True
    assert "1*" in stdout, "the table of what was measured"


def test_a_refused_trial_is_named_and_the_others_still_run(
    repository: RepositoryControl, tmp_path: Path
) -> None:
    original = repository.config(MODEL)
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), np.full((48, 64, 3), 90, np.uint8))
    out = tmp_path / "out"
    argv = tune_cli(repository.url, "--image", str(image), "--instances", "1", "--max-batch", "64,8")
    argv += ["--queue-delay-us", "0", "--concurrency", "1,4", "--requests", "20", "--warmup", "4"]
    argv += [
        "--output",
        str(tmp_path / "t.json"),
        "--csv",
        str(tmp_path / "t.csv"),
        "--write-config",
        str(out),
    ]
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "fixed_cost supports at most 32 images per batch, not max_batch_size 64" in run.stderr
    assert repository.config(MODEL) == original
    record = strict_loads((tmp_path / "t.json").read_text())
    by_settings = {
        (t["settings"]["max_batch_size"], t["settings"]["max_queue_delay_us"]): t for t in record["trials"]
    }
    assert set(by_settings) == {(16, None), (64, 0), (8, 0)}
    assert "at most 32 images" in by_settings[(64, 0)]["error"] and by_settings[(64, 0)]["levels"] == []
    assert len(by_settings[(8, 0)]["levels"]) == 2, "the trial after the refused one still ran"
    with open(tmp_path / "t.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 + 1 + 2 and sum(r["recommended"] == "True" for r in rows) == 1
    written = parse_config((out / MODEL / "config.pbtxt").read_text())
    assert settings_of(written).to_record() == record["recommendation"]["settings"]
