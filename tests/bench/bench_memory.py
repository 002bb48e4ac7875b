"""Memory of a long run: `python tests/bench/bench_memory.py [--requests 20000] [--url HOST:PORT]`.

Not a pytest module. Starts its own embedded server with the test model `slow_faces` (its
delay is pixel[0,0,0] x 10 ms: a black image answers at once; --url: a server that serves
it, e.g. the tests' own), sends 20,000 requests of a 64x64 image through one TritonSession
(callback mode, window of 16), and prints the RSS (VmRSS of /proc/self/status) after a
1,000-request warm-up and at the end, and the growth (target < 30 MB).
--smoke: 50 + 200 requests (seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.inference.core.session import TritonSession  # noqa: E402
from app.inference.core.spec import Limits, SessionSpec  # noqa: E402
from app.inference.protocol import parse_endpoints  # noqa: E402
from app.inference.result import InferenceResult  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=20_000)
    p.add_argument("--warmup", type=int, default=1_000)
    p.add_argument("--window", type=int, default=16)
    p.add_argument("--url", help="a server serving slow_faces (default: start one)")
    p.add_argument("--smoke", action="store_true", help="50 + 200 requests: seconds, figures meaningless")
    args = p.parse_args()
    if args.smoke:
        args.warmup, args.requests = 50, 200
    image = np.zeros((64, 64, 3), np.uint8)  # pixel[0,0,0] = 0: slow_faces answers at once
    with ExitStack() as stack:
        url = args.url
        if url is None:
            repo = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-memory-")))
            (repo / "slow_faces").symlink_to(
                ROOT / "tests" / "models" / "slow_faces", target_is_directory=True
            )
            url = stack.enter_context(EmbeddedServer(repo)).grpc_url
        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(url), model="slow_faces", limits=Limits(max_in_flight=args.window)
            )
        ) as session:
            finished = threading.Semaphore(0)
            failures: list[str] = []

            def done(result: InferenceResult) -> None:
                if not result.ok:
                    failures.append(result.error or result.status.value)
                finished.release()

            def send(n: int) -> float:
                t0 = time.perf_counter()
                for _ in range(n):
                    session.submit(image, done, source="memory", block=True)
                for _ in range(n):
                    finished.acquire()
                return time.perf_counter() - t0

            send(args.warmup)
            gc.collect()
            before = rss_mb()
            print(f"after {args.warmup} warm-up requests: RSS {before:.1f} MB", flush=True)
            seconds = send(args.requests)
            gc.collect()
            after = rss_mb()
            snap = session.stats.snapshot()
            print(
                f"after {args.requests} more requests ({args.requests / seconds:.0f} req/s, "
                f"{len(failures)} failed, stats ok={snap.ok}): RSS {after:.1f} MB",
                flush=True,
            )
            print(f"growth: {after - before:+.1f} MB (target < 30 MB)")
            if failures:
                print(f"first failure: {failures[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
