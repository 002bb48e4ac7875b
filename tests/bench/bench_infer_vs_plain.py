"""`python -m app infer` vs a plain tritonclient script, both timed as whole processes.

    python tests/bench/bench_infer_vs_plain.py [--images 300] [--rounds 3] [--url HOST:PORT]

Not a pytest module. Writes ~300 640x480 JPEGs (scaled/cropped variants of the astronaut)
into a temporary folder, starts one embedded server with the bundled face detector, then
for C = 8 and 16 runs, alternately, `python -m app infer --url ... --concurrency C FOLDER`
(stdout to /dev/null) and `tests/bench/plain_infer.py` (cv2.imread, RGB, async_infer with a
semaphore of C) on the same folder, and prints the median throughput of each and the ratio
(target >= 0.9), with each process's CPU time (user + system): on a small machine the
client's CPU is taken from the server's. --url: an existing server instead.
--smoke: 8 images, one round at C = 8, no warm-up (seconds; what `make test` runs so the
script cannot rot).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.resources import model_repository, sample_image  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402
from app.sources.images import read_image  # noqa: E402

SIZE = (640, 480)


def make_images(folder: Path, count: int) -> None:
    photo = read_image(sample_image())
    rng = np.random.default_rng(0)
    h, w = photo.shape[:2]
    for i in range(count):
        scale = rng.uniform(0.6, 1.0)
        cw, ch = int(w * scale), int(h * scale * 0.75)
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        crop = cv2.resize(photo[y0 : y0 + ch, x0 : x0 + cw], SIZE, interpolation=cv2.INTER_AREA)
        cv2.imwrite(str(folder / f"img{i:04d}.jpg"), cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--images", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", default="8,16")
    p.add_argument("--url", help="an existing server with the face detector (default: start one)")
    p.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = p.parse_args()
    if args.smoke:
        args.images, args.rounds, args.concurrency = 8, 1, "8"
    levels = [int(x) for x in args.concurrency.split(",")]
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-infer-"))
        make_images(Path(tmp), args.images)
        url = args.url or stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        print(f"{args.images} JPEGs {SIZE[0]}x{SIZE[1]}, server {url}, median of {args.rounds} rounds")
        for c in levels:
            app_cmd = [sys.executable, "-m", "app", "infer", "--url", url, "--concurrency", str(c), tmp]
            plain_cmd = [sys.executable, str(ROOT / "tests/bench/plain_infer.py"), "--url", url]
            plain_cmd += ["--concurrency", str(c), tmp]
            if not args.smoke:
                timed(plain_cmd)  # warm-up: server instances, page cache
            app_runs, plain_runs = [], []
            for _ in range(args.rounds):
                app_runs.append(timed(app_cmd))
                plain_runs.append(timed(plain_cmd))
            app_s = statistics.median(r[0] for r in app_runs)
            plain_s = statistics.median(r[0] for r in plain_runs)
            app_cpu = statistics.median(r[1] for r in app_runs)
            plain_cpu = statistics.median(r[1] for r in plain_runs)
            app_tp, plain_tp = args.images / app_s, args.images / plain_s
            print(
                f"C={c:>2}: app infer {app_tp:7.1f} img/s ({app_s:.2f} s, client CPU {app_cpu:.2f} s)   "
                f"plain {plain_tp:7.1f} img/s ({plain_s:.2f} s, client CPU {plain_cpu:.2f} s)   "
                f"ratio {app_tp / plain_tp:.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
