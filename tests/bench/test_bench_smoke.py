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
    "bench_protocols.py": (True, r"^  HTTP shared memory +[\d.]+/s"),
    "soak.py": (True, r"^ +1 +\d+ +\d+ +\d+ +\d+ +[\d.]+"),  # the first "minute"'s row
    "bench_compare_live.py": (True, r"round 1: single: A displayed +[\d.]+ fps"),
    "bench_live.py": (True, r"^2160p@30 +this +1 +[\d.]+ +[\d.]+ +[\d.]+"),  # the last configuration's row
    "bench_wall.py": (True, r"^1080p@30 #2 +\d+x\d+ +\d+ +[\d.]+ +[\d.]+ +\d+/\d+"),  # the last stream's row
    # Start servers of their own (and pause or SIGKILL them): that is what they measure.
    "bench_pause.py": (False, r"pause 1 s: \d+ of 60 ok"),
    "bench_fleet.py": (False, r"^120 of 120 ok, .*exit status 0"),
    "bench_lifeline.py": (False, r"group gone after the owner's SIGKILL \(1 rounds\): median [\d.]+ ms"),
    "bench_infer_vs_plain.py": (True, r"C= 8: app infer +[\d.]+ img/s"),
    "bench_tracking.py": (False, r"20 objects, 10 frames: update median [\d.]+ ms"),
    "bench_analytics.py": (False, r"50 tracks, 4 lines, 4 zones, no heat map: update median [\d.]+ ms"),
    "bench_memory.py": (True, r"growth: [-+][\d.]+ MB"),
    "bench_image_memory.py": (True, r"announces_30000\.jpg \([\d.]+ MB file\): peak RSS \d+ MB .*: failed"),
    "bench_masks.py": (True, r"face_detector 640x480, one at a time: server compute [\d.]+ ms"),
    "bench_server.py": (True, r"face_detector 640x480 concurrency 16: \d+ frames/s"),
    "bench_view_paint.py": (False, r"round 1: QImage over the buffer +[\d.]+ ms CPU per frame painted"),
    "bench_pure.py": (False, r"decode\+NMS YOLOv8 .* [\d.]+ ms"),
    # Starts servers of its own (a test repository with fixed_cost, and the bundled one).
    "bench_tune.py": (False, r"the tune took \d+ s"),
    # Starts an empty server of its own, to load the file on.
    "bench_model_file.py": (False, r"upload \+ load .*: median [\d.]+ s"),
    "bench_pipelines_live.py": (True, r"face_detector +[\d.]+ frames/s shown"),
    "bench_evaluate.py": (False, r"an operating point at new thresholds +[\d.]+ ms"),
    "bench_render.py": (False, r"detections 1280x720, 10 boxes +[\d.]+ +[\d.]+"),
    "bench_evaluation_panel.py": (False, r"a slider step \(GUI thread\) +[\d.]+ ms"),
    "bench_request_log.py": (False, r"request log full \(500 rows\): \+[\d.]+ MB resident"),
    "plain_infer.py": (True, r"ok=4 failed=0"),
    "bench_tracing.py": (True, r"^  tracer idle +[\d.]+ req/s \([-+][\d.]+%\)  client CPU [\d.]+ ms/request"),
}


WANTS_HTTP = {"bench_protocols.py"}  # also given the server's HTTP port (--http-url)


def smoke_run(script: str, server: EmbeddedServer) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(BENCH / script), "--smoke"]
    if SCRIPTS[script][0]:
        command += ["--url", server.grpc_url]
    if script in WANTS_HTTP:
        command += ["--http-url", server.http_url]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def smoke_runs(triton: EmbeddedServer) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every script's smoke run, all started when the first test of this module needs one."""
    with ThreadPoolExecutor(RUNNING, thread_name_prefix="bench-smoke") as pool:
        yield {script: pool.submit(smoke_run, script, triton) for script in SCRIPTS}


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
