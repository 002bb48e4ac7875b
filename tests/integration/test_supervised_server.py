"""The embedded server is supervised in every command that runs one: killed mid-run, it is
started again on the same address (within its restart budget) and the requests in flight
retry until their deadlines, so `infer` still ends with every record ok; `serve` keeps
serving on its ports; beyond the budget the supervisor gives up and says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import cv2
import pytest
import skimage.data
import tritonclient.grpc as grpcclient

from app.pipeline.connection.local_server import LocalServer
from app.pipeline.connection.restart_budget import RestartBudget
from app.pipeline.connection.supervisor import ServerSupervisor
from app.resources import model_repository
from tests.integration.procs import ended_at_exit, eventually, group_members, owned_by
from tests.integration.test_cli_infer import bgr

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
IMAGES = 400


def face_detector_only(folder: Path) -> Path:
    folder.mkdir()
    (folder / "face_detector").symlink_to(model_repository() / "face_detector", target_is_directory=True)
    return folder


def is_live(url: str) -> bool:
    try:
        with grpcclient.InferenceServerClient(url) as client:
            return bool(client.is_server_live(client_timeout=2))
    except Exception:
        return False


def test_infer_with_its_own_server_ends_every_record_ok_after_the_server_is_killed(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    photo = cv2.resize(bgr(skimage.data.astronaut()), (256, 256))
    for i in range(IMAGES):
        cv2.imwrite(str(folder / f"img_{i:04d}.png"), photo)
    stderr_file = tmp_path / "stderr.txt"
    with stderr_file.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "infer", "--timeout", "60", "--concurrency", "8", str(folder)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    lines: list[str] = []
    first_records = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if len(lines) >= 5:
                first_records.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    with ended_at_exit(proc) as groups:
        assert first_records.wait(300), "infer wrote no record"
        (server,) = owned_by(proc.pid).groups
        groups.append(server)
        killed_at = len(lines)
        os.kill(server, signal.SIGKILL)  # the server alone, as a crash would end it
        assert eventually(
            lambda: len(owned_by(proc.pid).groups) == 1 and owned_by(proc.pid).groups != (server,)
        )
        groups.extend(owned_by(proc.pid).groups)  # the restarted one
        proc.wait(timeout=600)
        reader.join(timeout=10)
    assert proc.stdout is not None
    proc.stdout.close()
    stderr = stderr_file.read_text()
    records = [json.loads(line) for line in lines if line.strip()]
    summary = records[-1]["summary"]
    assert killed_at < IMAGES, "the kill came after the run"
    not_ok = [r for r in records[:-1] if r["status"] != "ok"]
    assert not_ok == [], not_ok[:3]
    assert summary["total"] == IMAGES and summary["ok"] == IMAGES, summary
    assert proc.returncode == 0, stderr[-2000:]
    assert "the embedded Triton server was killed (SIGKILL); restarting it (1 of 3 restarts" in stderr
    assert "runs again at" in stderr
    assert all(not group_members(g) for g in groups), "a server process outlived infer"


def test_serve_keeps_serving_on_its_ports_after_the_server_is_killed(tmp_path: Path) -> None:
    repository = face_detector_only(tmp_path / "repo")
    stderr_file = tmp_path / "stderr.txt"
    with stderr_file.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--model-repository", str(repository)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    with ended_at_exit(proc) as groups:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("grpc="), stderr_file.read_text()[-2000:]
        url = line.split()[0].removeprefix("grpc=")
        (server,) = owned_by(proc.pid).groups
        groups.append(server)
        os.kill(server, signal.SIGKILL)
        assert eventually(lambda: owned_by(proc.pid).groups not in ((), (server,)), 120)
        groups.extend(owned_by(proc.pid).groups)
        assert eventually(lambda: is_live(url), 180), stderr_file.read_text()[-2000:]  # the same address
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        proc.stdout.close()
    stderr = stderr_file.read_text()
    assert "the embedded Triton server was killed (SIGKILL); restarting it (1 of 3 restarts" in stderr
    assert all(not group_members(g) for g in groups)


def test_the_supervisor_gives_up_once_the_budget_is_spent(tmp_path: Path) -> None:
    repository = face_detector_only(tmp_path / "repo")
    said: list[str] = []
    local = LocalServer(repository, budget=RestartBudget(limit=1), keep_ports=True)
    try:
        url = local.ensure()
        with ServerSupervisor(local, said.append) as supervisor:
            first = local.server
            assert first is not None and first.pid is not None
            os.kill(first.pid, signal.SIGKILL)
            assert eventually(lambda: supervisor.restarts == 1, 180), said
            assert local.url == url and is_live(url)
            second = local.server
            assert second is not None and second is not first and second.pid is not None
            os.kill(second.pid, signal.SIGKILL)
            assert supervisor.wait(60) and supervisor.gave_up, said
            assert not local.running
    finally:
        local.stop()
    assert any("restarting it (1 of 1 restarts allowed within 5 minutes)" in s for s in said), said
    assert "it is not restarted any more" in said[-1], said
