"""A fleet of servers behind one gRPC target, one of them killed in the middle of the run (the
issue's "done when": 3,000 of 3,000 ok). Two embedded servers serve `fixed_cost` (20 ms per
execution, one instance: about 50 images a second each); `python -m app infer --url
ipv4:H:P,H:P --concurrency 16 FOLDER` runs on N images; once the first server has answered a
quarter of them (about half-way through the run) its whole process group is SIGKILLed.
Printed: the records by status, the exit status, what each server answered, how many requests
were sent again, the run's length and throughput.
Run: .venv/bin/python tests/bench/bench_fleet.py [--images 3000] [--servers 2]
--smoke: 120 images (the servers' start plus a few seconds).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fleet import FLEET_MODEL, Killer, fleet, inference_count, target, write_images  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    images = 120 if args.smoke else args.images
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        folder = write_images(Path(tmp) / "images", images)
        with fleet(Path(tmp), args.servers) as servers:
            url = target(servers)
            dying, others = servers[0], servers[1:]
            command = [
                sys.executable, "-m", "app", "infer", "--url", url, "--model", FLEET_MODEL,
                "--concurrency", str(args.concurrency), str(folder),
            ]  # fmt: skip
            t0 = time.monotonic()
            with Killer(dying, after=max(10, images // 4), others=others) as killer:
                run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
            seconds = time.monotonic() - t0
            served = [inference_count(s) for s in others]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    statuses = collections.Counter(r.get("status") for r in lines if "summary" not in r)
    retried = re.search(r"^(\d+) request\(s\) sent again", run.stderr, re.MULTILINE)
    print(f"fleet of {args.servers} ({url}), {images} images, concurrency {args.concurrency}")
    if killer.killed:
        print(
            f"server 1 killed after answering {killer.served_before_kill} "
            f"(the others had answered {killer.others_served_before_kill} by then)"
        )
    else:
        print("server 1 was never killed (the run ended first)")
    print(f"the others answered {served} in all; sent again: {retried.group(1) if retried else 0}")
    ok = statuses.get("ok", 0)
    print(
        f"{ok} of {images} ok, {dict(statuses)}, exit status {run.returncode}, "
        f"{seconds:.1f} s ({images / seconds:.0f} img/s)"
    )
    if run.returncode != 0 or ok != images:
        print(run.stderr[-3000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
