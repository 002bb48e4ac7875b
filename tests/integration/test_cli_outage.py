"""`infer` across a server restart: the server is killed and started again on the same port
while requests are in flight; a restart shorter than the timeout fails nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from tests.conftest import TEST_MODELS
from tests.ui.viewer_fixtures import image_folder, slow_image

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def one_model_repository(folder: Path, model: str) -> Path:
    folder.mkdir()
    (folder / model).symlink_to(TEST_MODELS / model, target_is_directory=True)
    return folder


def test_infer_survives_a_server_restart_inside_the_timeout(tmp_path: Path) -> None:
    repository = one_model_repository(tmp_path / "repo", "slow_faces")
    grpc_port, http_port, metrics_port = free_ports(3)
    ports = {"grpc_port": grpc_port, "http_port": http_port, "metrics_port": metrics_port}
    count = 48
    folder = image_folder(tmp_path / "images", count, slow_image(400))  # ~0.4 s per batch
    server = EmbeddedServer(repository, **ports).start()
    lines: list[str] = []
    stderr_file = tmp_path / "stderr.txt"
    with stderr_file.open("w") as err:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "app", "infer", "--url", server.grpc_url, "--model", "slow_faces"),
                *("--timeout", "10", "--concurrency", "8", str(folder)),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,  # a file: progress lines never fill a pipe nobody reads
            text=True,
        )
    first_record = threading.Event()

    def read_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            first_record.set()

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    try:
        assert first_record.wait(60), "infer wrote no record"
        assert server.pid is not None
        killed = time.monotonic()
        os.killpg(server.pid, signal.SIGKILL)  # requests in flight lose their server
        written_before_the_kill = len(lines)
        server.stop(timeout=0)
        time.sleep(2.0)  # a restart of a few seconds (not an assertion: the outage's length)
        server = EmbeddedServer(repository, **ports).start()
        print(f"\nserver down for {time.monotonic() - killed:.2f} s (kill to ready on the same port)")
        proc.wait(timeout=120)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
        server.stop()
    stderr = stderr_file.read_text()
    records = [json.loads(line) for line in lines if line.strip()]
    summary = records[-1]["summary"]
    failed = [r for r in records[:-1] if r["status"] != "ok"]
    assert written_before_the_kill < count, "the kill came while inputs were still in flight or queued"
    assert failed == [], failed[:3]
    assert summary["total"] == count and summary["ok"] == count and summary["failed"] == 0, summary
    assert proc.returncode == 0, stderr[-2000:]
