"""`infer --resume` and `evaluate --resume`: a run SIGKILLed half way, then resumed: every
input ends exactly once across the two runs (none twice, none lost), the inputs the first run
ended are not sent again, and the summary (the report) counts both runs."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.evaluation_data import Img, Obj, write_dataset
from tests.integration.procs import eventually
from tests.strict_json import strict_loads
from tests.ui.viewer_fixtures import image_folder, slow_image

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
IMAGES = 120
EVAL_IMAGES = 40


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
    assert "name no input" not in resumed.stderr
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


def test_a_killed_evaluate_resumed_scores_every_image_once(triton: EmbeddedServer, tmp_path: Path) -> None:
    # slow_faces finds the middle half of every image, after pixel[0, 0, 0] x 10 ms.
    images = [Img(f"img_{i:03d}.png", 64, 64, [Obj("face", (16, 16, 48, 48))]) for i in range(EVAL_IMAGES)]
    for img in images:
        img.pixels = np.full((64, 64, 3), 20, np.uint8)  # 0.2 s, whichever channel is read
    dataset, _ = write_dataset("voc", tmp_path / "data", images, ["face"])
    records = tmp_path / "records.jsonl"
    command = [
        *("evaluate", "--url", triton.grpc_url, str(dataset), "--model", "slow_faces"),
        *("--concurrency", "4", "--records", str(records)),
    ]
    with (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "app", *command], cwd=ROOT, stderr=err)
    try:
        half = EVAL_IMAGES // 2
        assert eventually(lambda: any(len(lines_of(p)) >= half for p in tmp_path.glob("*.part")), 120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (part,) = tmp_path.glob("records.jsonl.*.part")
    first_run = len(lines_of(part))
    assert half <= first_run < EVAL_IMAGES, "killed half way"

    report_file = tmp_path / "report.json"
    resumed = run_cli_in_process(*command, "--resume", "--output", str(report_file))
    assert resumed.returncode == 0, resumed.stderr
    assert f"{EVAL_IMAGES - first_run} image(s) -> model 'slow_faces'" in resumed.stderr
    report = strict_loads(report_file.read_text())
    assert report["resumed"]["records"] == first_run
    assert report["dataset"]["evaluated_images"] == EVAL_IMAGES, "both runs' images scored"
    assert report["metrics"]["map50"] == 1.0 and report["per_class"][0]["tp"] == EVAL_IMAGES
    seen = collections.Counter(r["source"] for r in (json.loads(line) for line in lines_of(records)))
    assert len(seen) == EVAL_IMAGES and set(seen.values()) == {1}, "every image once, none twice"
    assert not list(tmp_path.glob("*.part"))


def test_earlier_records_of_other_paths_are_named_and_kept(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = image_folder(tmp_path / "images", 3, slow_image(0))
    output = tmp_path / "records.jsonl"
    other = {"source": "elsewhere/x.png", "frame": None, "status": "ok", "detections": []}
    (tmp_path / "records.jsonl.0123abcd.part").write_text(json.dumps(other) + "\n")
    done = run_cli_in_process(
        *("infer", "--url", triton.grpc_url, "--model", "slow_faces", "--output", str(output)),
        *("--resume", str(folder)),
    )
    assert done.returncode == 0, done.stderr
    assert "1 earlier record(s) name no input of this run" in done.stderr
    *records, last = [json.loads(line) for line in lines_of(output)]
    assert records[0] == other and len(records) == 4
    assert last["summary"]["total"] == 4 and last["summary"]["resumed"]["records"] == 1
    refused = run_cli_in_process("infer", "--url", triton.grpc_url, "--resume", str(folder))
    assert refused.returncode == 2 and "--resume needs --output FILE" in refused.stderr
