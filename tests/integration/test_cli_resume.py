"""`infer --resume`: a run SIGKILLed half way, then resumed: every input ends exactly once
across the two runs (none twice, none lost), the inputs the first run ended are not sent
again, and the summary counts both runs."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.integration.procs import eventually
from tests.ui.viewer_fixtures import image_folder, slow_image

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
IMAGES = 120


def lines_of(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def test_a_killed_infer_resumed_ends_every_input_once(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "images", IMAGES, slow_image(200))  # 0.2 s per batch
    output = tmp_path / "records.jsonl"
    command = [
        *("infer", "--url", triton.grpc_url, "--model", "slow_faces", "--concurrency", "4"),
        *("--output", str(output), str(folder)),
    ]
    with (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "app", *command], cwd=ROOT, stderr=err)
    try:
        assert eventually(lambda: any(len(lines_of(p)) >= IMAGES // 2 for p in tmp_path.glob("*.part")), 120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (part,) = tmp_path.glob("records.jsonl.*.part")
    first_run = [json.loads(line) for line in lines_of(part)]
    assert IMAGES // 2 <= len(first_run) < IMAGES, "killed half way"
    assert not output.exists()

    resumed = run_cli_in_process(*command, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(first_run)} input(s) already done" in resumed.stderr
    assert f"{IMAGES - len(first_run)} input(s) -> model 'slow_faces'" in resumed.stderr
    lines = [json.loads(line) for line in lines_of(output)]
    *records, last = lines
    seen = collections.Counter(r["source"] for r in records)
    assert sorted(seen) == sorted(str(p) for p in folder.iterdir()), "none lost"
    assert set(seen.values()) == {1}, "none twice"
    assert all(r["status"] == "ok" for r in records)
    assert records[: len(first_run)] == first_run, "the first run's records kept as they were"
    summary = last["summary"]
    assert summary["total"] == summary["ok"] == IMAGES, "the summary counts both runs"
    assert summary["resumed"]["records"] == len(first_run)
    assert not list(tmp_path.glob("*.part")), "the killed run's temporary file is gone"
