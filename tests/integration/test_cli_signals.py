"""SIGTERM and SIGHUP stop a headless command like Ctrl-C: `infer` writes its summary, exits
130, and stops the embedded server it started, leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.server.embedded import EmbeddedServer
from tests.integration.procs import OwnedByProcess, owned_by

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
INFER = [sys.executable, "-m", "app", "infer", "--concurrency", "2", "--timeout", "60"]


def images(folder: Path, count: int, value: int) -> Path:
    folder.mkdir()
    for i in range(count):
        cv2.imwrite(str(folder / f"{i:05d}.png"), np.full((16, 16, 3), value, np.uint8))
    return folder


def interrupted_run(argv: list[str], sig: signal.Signals) -> tuple[int, str, str, OwnedByProcess]:
    """Runs `argv` until it starts sending, sends `sig`; its status, stdout, stderr and the
    embedded server it had started (if any)."""
    # faulthandler: a run that hangs is sent SIGABRT, and its threads' stacks say where it hung.
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "input(s)" not in line:  # "N input(s) ... -> model": requests are being sent
            line = proc.stderr.readline()
        assert "input(s)" in line, line
        owned = owned_by(proc.pid)
        proc.send_signal(sig)
        try:
            stdout, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            stdout, stderr = proc.communicate(timeout=30)
            pytest.fail(f"still running 60 s after {sig.name}; its stacks:\n{stderr[-12000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):  # also when it timed out: no pipe left to the GC
            if pipe is not None:
                pipe.close()
    return proc.returncode, stdout, stderr, owned


def last_record(stdout: str) -> dict[str, dict[str, int]]:
    record: dict[str, dict[str, int]] = json.loads(stdout.strip().splitlines()[-1])
    return record


def test_sigterm_of_infer_with_its_own_server_writes_the_summary_and_leaves_nothing(tmp_path: Path) -> None:
    # Enough quick images that the run is still going when the signal comes.
    folder = images(tmp_path / "many", 3000, 100)
    status, stdout, stderr, owned = interrupted_run([*INFER, str(folder)], signal.SIGTERM)
    assert status == 130, stderr[-3000:]
    summary = last_record(stdout)["summary"]
    assert summary["total"] < 3000, "interrupted before the end"
    assert summary["total"] == len(stdout.strip().splitlines()) - 1
    assert owned.groups, "it had started its own server"
    assert owned.live_members() == [] and owned.regions() == [] and owned.workdirs() == []


def test_sighup_of_infer_writes_the_summary(triton: EmbeddedServer, tmp_path: Path) -> None:
    # slow_faces sleeps pixel[0,0,0] x 10 ms per batch: 2 s per image here.
    folder = images(tmp_path / "slow", 6, 200)
    status, stdout, stderr, _ = interrupted_run(
        [*INFER, "--url", triton.grpc_url, "--model", "slow_faces", str(folder)], signal.SIGHUP
    )
    assert status == 130, stderr[-3000:]
    summary = last_record(stdout)["summary"]
    assert summary["ok"] == 0 and summary["total"] == len(stdout.strip().splitlines()) - 1


def test_sigterm_counts_every_announced_input_as_ended_or_not_started(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    # 2,000 inputs of 30 ms each (slow_faces), two at a time: SIGTERM comes early in the run.
    folder = tmp_path / "many"
    folder.mkdir()
    cv2.imwrite(str(folder / "0000.png"), np.full((16, 16, 3), 3, np.uint8))
    for i in range(1, 2000):
        (folder / f"{i:04d}.png").symlink_to(folder / "0000.png")
    status, stdout, stderr, _ = interrupted_run(
        [*INFER, "--url", triton.grpc_url, "--model", "slow_faces", str(folder)], signal.SIGTERM
    )
    assert status == 130, stderr[-3000:]
    summary = last_record(stdout)["summary"]
    assert summary["interrupted"] is True and summary["total"] < 2000
    assert summary["total"] == len(stdout.strip().splitlines()) - 1
    assert summary["total"] + summary["not_started"] == 2000
