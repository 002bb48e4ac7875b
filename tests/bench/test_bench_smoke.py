"""Every script of tests/bench in its smoke mode (seconds each, against the tests' own server
where it needs one), so none of them can rot unnoticed: each must exit 0 and print its
figures. The figures themselves are never asserted (speed is measured by running the
benchmarks for real on a quiet machine, not by tests); `pytest -rP` shows them."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from app.server.embedded import EmbeddedServer

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
RUNNING = 3  # smoke runs at a time: most of each is start-up and waiting, so they overlap

# script: (takes --url of the tests' server, a line of figures it must print); the longest first
SCRIPTS: dict[str, tuple[bool, str]] = {
    "bench_speed.py": (True, r"1\. 1080p video, 10 frames, 4 in flight, auto: app +[\d.]+/s"),
    "soak.py": (True, r"^ +1 +\d+ +\d+ +\d+ +\d+ +[\d.]+"),  # the first "minute"'s row
    "bench_compare_live.py": (True, r"round 1: single: A displayed +[\d.]+ fps"),
    "bench_live.py": (True, r"^2160p@30 +this +1 +[\d.]+ +[\d.]+ +[\d.]+"),  # the last configuration's row
    # Starts (and SIGKILLs) servers of its own: that is what it measures.
    "bench_lifeline.py": (False, r"group gone after the owner's SIGKILL \(1 rounds\): median [\d.]+ ms"),
    "bench_infer_vs_plain.py": (True, r"C= 8: app infer +[\d.]+ img/s"),
    "bench_tracking.py": (False, r"20 objects, 10 frames: update median [\d.]+ ms"),
    "bench_memory.py": (True, r"growth: [-+][\d.]+ MB"),
    "bench_masks.py": (True, r"face_detector 640x480, one at a time: server compute [\d.]+ ms"),
    "bench_server.py": (True, r"face_detector 640x480 concurrency 16: \d+ frames/s"),
    "bench_view_paint.py": (False, r"round 1: QImage over the buffer +[\d.]+ ms CPU per frame painted"),
    "bench_pure.py": (False, r"decode\+NMS YOLOv8 .* [\d.]+ ms"),
    "plain_infer.py": (True, r"ok=4 failed=0"),
}


def smoke_run(script: str, url: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(BENCH / script), "--smoke"]
    if SCRIPTS[script][0]:
        command += ["--url", url]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def smoke_runs(triton: EmbeddedServer) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every script's smoke run, all started when the first test of this module needs one."""
    with ThreadPoolExecutor(RUNNING, thread_name_prefix="bench-smoke") as pool:
        yield {script: pool.submit(smoke_run, script, triton.grpc_url) for script in SCRIPTS}


def test_every_script_has_a_smoke_run_here() -> None:
    scripts = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith(("test_", "__")))
    assert scripts == sorted(SCRIPTS), "a new benchmark script needs its --smoke run listed in SCRIPTS"


@pytest.mark.slow
@pytest.mark.parametrize("script", list(SCRIPTS))
def test_smoke_run_prints_its_figures(
    script: str, smoke_runs: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    done = smoke_runs[script].result()
    assert done.returncode == 0, f"{script} --smoke exited {done.returncode}:\n{done.stderr[-4000:]}"
    figures = SCRIPTS[script][1]
    assert re.search(figures, done.stdout, re.MULTILINE), f"no figures from {script}:\n{done.stdout}"
    print(done.stdout)
