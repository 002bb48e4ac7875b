"""Triton's repository extension against the real server: the index with reasons, load with a
config override and back, a refused load (the server's reason, the model as it was), unload,
the `repository` command, a server whose model control is off; the batcher figures in
`infer`'s summary and the metrics reader on the embedded server.

The session's server is shared: every test loads the original config back (or the files)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.introspection.metrics_history import MetricsHistory, MetricsPoller
from app.inference.introspection.model_config import parse_config
from app.inference.introspection.repository import (
    RepositoryControl,
    RepositoryError,
    RepositoryErrorKind,
)
from app.inference.introspection.server_metrics import MetricsReader
from app.inference.protocol import parse_url
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.integration.procs import eventually

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
TEST_MODELS = ROOT / "tests" / "models"
MODEL = "fixed_cost"


def cli(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def repository(triton: EmbeddedServer) -> Iterator[RepositoryControl]:
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        original = control.config(MODEL)
        yield control
        if control.config(MODEL) != original:
            control.load(MODEL, original)


def test_index_config_and_a_load_with_an_override_round_trip(repository: RepositoryControl) -> None:
    entries = {e.name: e for e in repository.index()}
    assert entries[MODEL].state == "READY"
    broken = entries["broken_at_load"]
    assert broken.state == "UNAVAILABLE" and "refuses to load (weights file missing)" in broken.reason
    assert "At:" not in broken.reason, "the backend's traceback is cut"

    assert repository.control_enabled(), "explicit mode: loading is allowed"
    assert {e.name for e in repository.index()} == set(entries), "asking left nothing behind"
    original = repository.config(MODEL)
    text = repository.config_text(MODEL)
    assert parse_config(text) == original, "config.pbtxt text carries the whole config"
    changed = parse_config(text.replace("max_batch_size: 16", "max_batch_size: 8"))
    repository.load(MODEL, changed)
    assert repository.config(MODEL)["max_batch_size"] == 8
    repository.load(MODEL, original)
    assert repository.config(MODEL) == original


def test_a_refused_load_gives_the_servers_reason_and_leaves_the_model_as_it_was(
    repository: RepositoryControl,
) -> None:
    original = repository.config(MODEL)
    with pytest.raises(RepositoryError) as refused:
        repository.load(MODEL, {**original, "max_batch_size": 64})
    assert refused.value.kind is RepositoryErrorKind.LOAD_FAILED
    assert "fixed_cost supports at most 32 images per batch, not max_batch_size 64" in str(refused.value)
    assert repository.config(MODEL) == original
    assert {e.name: e.state for e in repository.index()}[MODEL] == "READY"


def test_unload_then_load_from_the_repository_files(repository: RepositoryControl) -> None:
    original = repository.config(MODEL)
    repository.unload(MODEL)
    try:
        assert {e.name: e.state for e in repository.index()}[MODEL] != "READY"
        with pytest.raises(RepositoryError) as gone:
            repository.config(MODEL)
        assert gone.value.kind is RepositoryErrorKind.NOT_FOUND
    finally:
        repository.load(MODEL)
    assert repository.config(MODEL) == original
    with pytest.raises(RepositoryError, match="no model 'no_such_model' in the repository") as unknown:
        repository.load("no_such_model")
    assert unknown.value.kind is RepositoryErrorKind.NOT_FOUND


def test_repository_command(repository: RepositoryControl, tmp_path: Path) -> None:
    url = repository.url
    listing = cli("repository", "--url", url, "list")
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if line.startswith("broken_at_load"))
    assert "UNAVAILABLE" in row and "weights file missing" in row

    shown = cli("repository", "--url", url, "config", MODEL)
    assert shown.returncode == 0 and parse_config(shown.stdout) == repository.config(MODEL)
    edited = tmp_path / "config.pbtxt"
    edited.write_text(shown.stdout.replace("count: 1", "count: 2"))
    loaded = cli("repository", "--url", url, "load", MODEL, "--config", str(edited))
    assert loaded.returncode == 0, loaded.stderr
    assert repository.config(MODEL)["instance_group"][0]["count"] == 2

    refused = tmp_path / "refused.pbtxt"
    refused.write_text(shown.stdout.replace("max_batch_size: 16", "max_batch_size: 64"))
    status = cli("repository", "--url", url, "load", MODEL, "--config", str(refused))
    assert status.returncode == 1 and "at most 32 images per batch" in status.stderr
    assert repository.config(MODEL)["instance_group"][0]["count"] == 2, "left as it was"

    bad = tmp_path / "bad.pbtxt"
    bad.write_text("max_batch_size: sixteen\n")
    status = cli("repository", "--url", url, "load", MODEL, "--config", str(bad))
    assert status.returncode == 2 and f"{bad}:1:" in status.stderr and "sixteen" in status.stderr


def test_a_server_without_repository_control_is_named_plainly(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / MODEL).symlink_to(TEST_MODELS / MODEL, target_is_directory=True)
    with EmbeddedServer(repo, model_control="none") as server:
        with RepositoryControl(parse_url(server.grpc_url)) as control:
            assert [e.name for e in control.index()] == [MODEL], "reading works in any mode"
            assert control.control_enabled() is False, "asked without trying a real load"
            with pytest.raises(RepositoryError) as off:
                control.unload(MODEL)
            assert off.value.kind is RepositoryErrorKind.CONTROL_DISABLED
            assert "model control mode is 'none' or 'poll'" in str(off.value)
        status = cli("repository", "--url", server.grpc_url, "load", MODEL)
        assert status.returncode == 2 and "--model-control-mode=explicit" in status.stderr
        tune = cli("tune", "--url", server.grpc_url, "--model", MODEL, "--requests", "5")
        assert tune.returncode == 2 and "model control mode" in tune.stderr
        assert "trial 1" not in tune.stderr, "stopped before measuring anything"


def test_infer_summary_has_the_batchers_figures(triton: EmbeddedServer, tmp_path: Path) -> None:
    for i in range(6):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((32, 32, 3), 40 * i, np.uint8))
    run = cli("infer", "--url", triton.grpc_url, "--model", MODEL, "--concurrency", "3", str(tmp_path))
    assert run.returncode == 0, run.stderr
    timing = json.loads(run.stdout.splitlines()[-1])["summary"]["timing"]
    # fixed_cost's own config has no dynamic batching: one execution per image.
    assert timing["server_avg_batch"] == 1.0
    assert timing["server_executions_per_s"] > 0


def test_metrics_of_the_embedded_server(triton: EmbeddedServer) -> None:
    history = MetricsHistory()
    with MetricsPoller(MetricsReader(f"127.0.0.1:{triton.metrics_port}"), history, interval_s=0.1):
        assert eventually(lambda: len(history) >= 3)
    snapshot = history.latest()
    assert snapshot is not None
    assert snapshot.reachable, snapshot.error
    assert snapshot.cpu_memory_total_bytes and snapshot.cpu_memory_used_bytes
    assert 0 < snapshot.cpu_memory_used_bytes <= snapshot.cpu_memory_total_bytes
    assert snapshot.cpu_utilization is not None and 0 <= snapshot.cpu_utilization <= 1
    assert MODEL in snapshot.pending_requests
    assert snapshot.gpus == (), "started with --allow-gpu-metrics=false, and no GPU here"
    assert [value for _, value in history.series("cpu_memory_used_bytes")][-1] > 0


EVIL_MODEL = """
import pathlib
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        pathlib.Path(__file__).parents[1].joinpath("ran").write_text("code outside the repository ran")

    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[]) for _ in requests]
"""


def test_a_name_outside_the_repository_is_refused_before_any_call(
    triton: EmbeddedServer, combined_repository: Path
) -> None:
    evil = combined_repository.parent / "outside" / "evil"
    (evil / "1").mkdir(parents=True, exist_ok=True)
    (evil / "config.pbtxt").write_text(
        'backend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "x", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
        'output [ { name: "y", data_type: TYPE_FP32, dims: [ 1 ] } ]\n'
    )
    (evil / "1" / "model.py").write_text(EVIL_MODEL)
    with RepositoryControl(parse_url(triton.grpc_url)) as control:
        with pytest.raises(RepositoryError) as refused:
            control.load("../outside/evil")
        assert refused.value.kind is RepositoryErrorKind.BAD_NAME
        assert "'../outside/evil'" in str(refused.value) and "path separator" in str(refused.value)
    status = run_cli_in_process("repository", "--url", triton.grpc_url, "load", "../outside/evil")
    assert status.returncode == 2, status.stderr
    assert "'../outside/evil'" in status.stderr and "loaded" not in status.stderr
    hidden = run_cli_in_process("repository", "--url", triton.grpc_url, "unload", ".hidden")
    assert hidden.returncode == 2 and "'.hidden'" in hidden.stderr and "starts with a dot" in hidden.stderr
    assert not (evil / "ran").exists(), "the server never saw the name"


def test_an_unload_of_a_model_the_server_does_not_have_is_an_error(repository: RepositoryControl) -> None:
    with pytest.raises(RepositoryError) as unknown:
        repository.unload("nonexistent_model")
    assert unknown.value.kind is RepositoryErrorKind.NOT_FOUND
    assert "'nonexistent_model'" in str(unknown.value) and "no such model" in str(unknown.value)
    status = run_cli_in_process("repository", "--url", repository.url, "unload", "nonexistent_model")
    assert status.returncode == 2, status.stderr
    assert "'nonexistent_model'" in status.stderr and "no such model" in status.stderr
    assert "unloaded" not in status.stderr
    assert {e.name: e.state for e in repository.index()}[MODEL] == "READY", "nothing else touched"
