"""`python -m app bench`: the concurrency sweep against the real test server (figures not judged)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from app.server.embedded import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]


def test_sweep_prints_both_pipelines_and_a_ratio_per_level(triton: EmbeddedServer, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "app", "bench", "--url", triton.grpc_url, "--requests", "20"),
            *("--concurrency", "1,2", "--warmup", "4", "--output", str(out)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    # Progress names the stage (level n of N, which pipeline); the final line of each is complete.
    assert "level 2 (2/2), plain: 20/20 requests" in done.stderr, done.stderr
    for level in (1, 2):
        for pipeline in ("app", "plain"):
            assert re.search(rf"^\s*{level}\s+{pipeline}\s+\d+\.\d", done.stdout, re.M), done.stdout
        assert re.search(rf"^\s*{level}\s+ratio\s+\d+\.\d{{3}}", done.stdout, re.M), done.stdout
    report = json.loads(out.read_text())
    assert report["model"] == "face_detector" and report["requests"] == 20
    assert [entry["concurrency"] for entry in report["levels"]] == [1, 2]
    for entry in report["levels"]:
        for pipeline in ("app", "plain"):
            figures = entry[pipeline]
            assert figures["ok"] == 20 and figures["failed"] == 0
            assert figures["throughput"] > 0
            assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"]
        assert entry["ratio"] == round(entry["app"]["throughput"] / entry["plain"]["throughput"], 3)


def test_bad_levels_are_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app", "bench", "--url", "127.0.0.1:1", "--concurrency", "1,x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--concurrency" in done.stderr
