"""The server tune's goals, with the real `tune`, `repository` and `bench` commands:

1. fixed_cost (tests/models: a fixed cost per execution, like a GPU), starting from its own
   config (one instance, no dynamic batching): the recommendation's throughput at least 3x
   the original config's at the same load, at a p95 no worse, both measured in the same run;
2. the written config.pbtxt loaded with `repository load --config`, then `bench` at the
   recommended concurrency: throughput within 15% of what the tune measured;
3. the bundled face detector (CPU): the table of every trial, the recommendation, and how
   long the tune took.

    python tests/bench/bench_tune.py [--requests 200] [--part fixed|face|all] [--smoke]

--smoke: a few requests per level and fewer trials (seconds, plus the servers' start), to
check the script runs. Each part starts an embedded server of its own. Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from app.resources import model_repository
from app.server.embedded import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]
FIXED_COST = ROOT / "tests" / "models" / "fixed_cost"
APP = [sys.executable, "-m", "app"]


def command(*argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    done = subprocess.run([*APP, *argv], cwd=ROOT, capture_output=True, text=True)
    return done, time.monotonic() - t0


def machine() -> str:
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (a shared machine: figures vary)"


def fixed_cost_part(tmp: Path, requests: int, smoke: bool) -> bool:
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "fixed_cost").symlink_to(FIXED_COST, target_is_directory=True)
    image = tmp / "frame.png"
    cv2.imwrite(str(image), np.full((64, 64, 3), 90, np.uint8))
    levels = "1,4" if smoke else "1,4,16"
    delays = "off,2000" if smoke else "off,0,2000"
    instances = "1" if smoke else "1,2"
    with EmbeddedServer(repo) as server:
        url = server.grpc_url
        print(f"1. fixed_cost (20 ms per execution, any batch) on {url}; {machine()}")
        out, written = tmp / "tune.json", tmp / "tuned"
        tune, seconds = command(
            "tune", "--url", url, "--model", "fixed_cost", "--image", str(image),
            "--instances", instances, "--queue-delay-us", delays, "--concurrency", levels,
            "--requests", str(requests), "--output", str(out), "--write-config", str(written),
        )  # fmt: skip
        print(tune.stdout)
        if tune.returncode != 0:
            print(tune.stderr[-3000:])
            return False
        report: dict[str, Any] = json.loads(out.read_text())
        rec = report["recommendation"]
        ratio = rec["throughput"] / rec["original_throughput"]
        p95_ok = rec["p95_ms"] <= rec["original_p95_ms"]
        print(
            f"tune took {seconds:.0f} s. Recommended {rec['settings']} at {rec['concurrency']} in flight: "
            f"{rec['throughput']:.1f} req/s, p95 {rec['p95_ms']:.1f} ms; original config at the same load "
            f"{rec['original_throughput']:.1f} req/s, p95 {rec['original_p95_ms']:.1f} ms"
        )
        print(f"   throughput {ratio:.2f}x (goal >= 3x): {'met' if ratio >= 3 else 'NOT met'}; "
              f"p95 no worse: {'yes' if p95_ok else 'NO'}")  # fmt: skip

        config = written / "fixed_cost" / "config.pbtxt"
        load, _ = command("repository", "--url", url, "load", "fixed_cost", "--config", str(config))
        if load.returncode != 0:
            print(load.stderr)
            return False
        figures = []
        for round_ in range(1 if smoke else 3):  # the machine may be shared: a median of rounds
            bench_json = tmp / f"bench{round_}.json"
            bench, _ = command(
                "bench", "--url", url, "--model", "fixed_cost", "--image", str(image),
                "--concurrency", str(rec["concurrency"]), "--transport", rec["transport"],
                "--requests", str(requests), "--output", str(bench_json),
            )  # fmt: skip
            if bench.returncode != 0:
                print(bench.stderr[-3000:])
                return False
            figures.append(json.loads(bench_json.read_text())["levels"][0])
        again = sorted(figures, key=lambda f: f["throughput"])[len(figures) // 2]
        gap = again["throughput"] / rec["throughput"] - 1
        rounds = ", ".join(f"{f['throughput']:.1f} (avg batch {f['server_avg_batch']})" for f in figures)
        print(
            f"2. bench on the written config, {len(figures)} round(s): {rounds} req/s; median "
            f"{again['throughput']:.1f} req/s, p95 {again['p95_ms']:.1f} ms: {gap:+.1%} from the tune's "
            f"figure (goal within 15%: {'met' if abs(gap) <= 0.15 else 'NOT met'})"
        )
        return ratio >= 3 and p95_ok and abs(gap) <= 0.15


def face_detector_part(tmp: Path, requests: int, smoke: bool) -> bool:
    extra = ["--instances", "1", "--queue-delay-us", "off,2000", "--concurrency", "1,4"] if smoke else []
    repository = model_repository()
    if smoke:  # the face detector alone (a bundled model is a folder of its own): a lighter start
        repository = tmp / "repo"
        repository.mkdir()
        bundled = model_repository() / "face_detector"
        (repository / "face_detector").symlink_to(bundled, target_is_directory=True)
    with EmbeddedServer(repository) as server:
        print(f"3. face_detector (bundled, CPU) on {server.grpc_url}; {machine()}")
        tune, seconds = command(
            "tune", "--url", server.grpc_url, "--model", "face_detector",
            "--requests", str(requests), "--output", str(tmp / "face.json"), *extra,
        )  # fmt: skip
        print(tune.stdout)
        if tune.returncode != 0:
            print(tune.stderr[-3000:])
            return False
        print(f"the tune took {seconds:.0f} s ({seconds / 60:.1f} min) with the default lists")
        return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=200, help="measured requests per level")
    p.add_argument("--part", choices=["fixed", "face", "all"], default="all")
    p.add_argument("--smoke", action="store_true", help="a few requests, fewer trials: seconds")
    args = p.parse_args()
    requests = 12 if args.smoke else args.requests
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
        if args.part in ("fixed", "all"):
            (Path(tmp) / "fixed").mkdir()
            ok = fixed_cost_part(Path(tmp) / "fixed", requests, args.smoke) and ok
        if args.part in ("face", "all"):
            (Path(tmp) / "face").mkdir()
            ok = face_detector_part(Path(tmp) / "face", requests, args.smoke) and ok
    return 0 if ok or args.smoke else 1  # a smoke run's figures mean nothing: not judged


if __name__ == "__main__":
    sys.exit(main())
