"""The speed goals of the transports / client batching / downscale work, as whole processes
side by side on one embedded server (alternating rounds, medians):

1. a 1920x1080 MJPG video through `python -m app infer --concurrency 4` (transport auto)
   against a plain tritonclient loop that reads the same video and sends full frames over
   gRPC (tests/bench/plain_infer.py --video): goal >= 2.0x;
2. a folder of 640x480 JPEGs through `infer --concurrency 8` (auto) against the plain
   read + decode + infer loop: goal >= 1.10x;
3. the same with `--transport grpc` forced: goal >= 0.95x (no regression for remote servers);
4. nothing left in /dev/shm by `infer` after a normal exit, after Ctrl-C, and (after the
   next start) after a SIGKILL.

    python tests/bench/bench_speed.py [--frames 300] [--images 1000] [--rounds 3] [--url HOST:PORT]

Not a pytest module (timings belong in a benchmark, not in tests). --url: an existing server
with the face detector instead of the embedded one. --smoke: goal 1 on 10 frames (one round,
no warm-up), and /dev/shm after a normal exit and after a SIGKILL on 8 images (seconds; what
`make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import os
import signal
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

from app.inference.core.session import TritonSession  # noqa: E402
from app.inference.core.spec import SessionSpec  # noqa: E402
from app.inference.protocol import parse_endpoints  # noqa: E402
from app.resources import model_repository, sample_image  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402
from app.sources.images import read_image  # noqa: E402
from tests.bench.bench_infer_vs_plain import make_images, timed  # noqa: E402

PLAIN = str(ROOT / "tests/bench/plain_infer.py")


def make_video(path: Path, frames: int, size: tuple[int, int] = (1920, 1080), fps: float = 30.0) -> None:
    """The astronaut's face moving across a 1080p MJPG video."""
    photo = cv2.cvtColor(read_image(sample_image()), cv2.COLOR_RGB2BGR)
    face = cv2.resize(photo, (700, 700), interpolation=cv2.INTER_CUBIC)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, size)
    w, h = size
    for i in range(frames):
        canvas = np.full((h, w, 3), (60, 90, 120), np.uint8)
        x = int((w - 700) * (i / max(frames - 1, 1)))
        canvas[(h - 700) // 2 : (h - 700) // 2 + 700, x : x + 700] = face
        writer.write(canvas)
    writer.release()


def compare(
    name: str, app_cmd: list[str], plain_cmd: list[str], count: int, rounds: int, goal: float, warmup: bool
) -> float:
    if warmup:  # the server's instances, the page cache
        timed(plain_cmd)
        timed(app_cmd)
    app_runs, plain_runs = [], []
    for _ in range(rounds):
        app_runs.append(timed(app_cmd))
        plain_runs.append(timed(plain_cmd))
    app_s = statistics.median(r[0] for r in app_runs)
    plain_s = statistics.median(r[0] for r in plain_runs)
    ratio = plain_s / app_s
    verdict = "met" if ratio >= goal else "NOT met"
    app_cpu = statistics.median(r[1] for r in app_runs)
    plain_cpu = statistics.median(r[1] for r in plain_runs)
    print(
        f"{name}: app {count / app_s:7.1f}/s ({app_s:.2f} s, client CPU {app_cpu:.2f} s)   "
        f"plain {count / plain_s:7.1f}/s ({plain_s:.2f} s, client CPU {plain_cpu:.2f} s)   "
        f"ratio {ratio:.2f}x (goal {goal}x: {verdict})",
        flush=True,
    )
    return ratio


def regions() -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob("tviewer-c*"))


def shm_checks(url: str, folder: str, smoke: bool = False) -> None:
    infer = [sys.executable, "-m", "app", "infer", "--url", url, folder]
    with subprocess.Popen(infer, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as done:
        done.wait()
    left = [n for n in regions() if n.startswith(f"tviewer-c{done.pid}-")]  # not other programs'
    print(f"/dev/shm after a normal exit: {left or 'nothing left'}")
    ends = ((signal.SIGINT, "Ctrl-C"), (signal.SIGKILL, "SIGKILL"))
    for sig, what in ends[1:] if smoke else ends:  # smoke: the kill and the sweep after it
        proc = subprocess.Popen(infer, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        for line in proc.stderr:  # until it has started sending (or has already ended)
            if "input(s)" in line:
                break
        time.sleep(0.5)
        mine = [p.name for p in Path("/dev/shm").glob(f"tviewer-c{proc.pid}-*")]
        proc.send_signal(sig)
        proc.communicate(timeout=30)
        left = [n for n in regions() if n.startswith(f"tviewer-c{proc.pid}-")]
        print(f"/dev/shm after {what} ({len(mine)} regions in use before): {left or 'nothing left'}")
        if left:
            with TritonSession(SessionSpec(endpoints=parse_endpoints(url))):  # the next start
                pass
            print(f"  ... after the next start: {[n for n in regions() if n in left] or 'nothing left'}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--url", help="an existing server with the face detector (default: start one)")
    p.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = p.parse_args()
    if args.smoke:
        args.frames, args.images, args.rounds = 10, 8, 1
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-speed-"))
        video, folder = Path(tmp) / "walk1080.avi", Path(tmp) / "jpegs"
        folder.mkdir()
        make_video(video, args.frames)
        make_images(folder, args.images)
        url = args.url or stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        load = os.getloadavg()[0]
        cores = os.cpu_count()
        print(f"server {url}; {cores} cores, load {load:.2f}; median of {args.rounds} rounds")
        app = [sys.executable, "-m", "app", "infer", "--url", url]
        plain = [sys.executable, PLAIN, "--url", url]
        warmup = not args.smoke
        compare(
            f"1. 1080p video, {args.frames} frames, 4 in flight, auto",
            [*app, "--concurrency", "4", str(video)],
            [*plain, "--concurrency", "4", "--video", str(video)],
            args.frames,
            args.rounds,
            2.0,
            warmup,
        )
        if args.smoke:  # goals 2 and 3 run the same code on other inputs
            shm_checks(url, str(folder), smoke=True)
            return 0
        compare(
            f"2. {args.images} JPEGs 640x480, 8 in flight, auto",
            [*app, "--concurrency", "8", str(folder)],
            [*plain, "--concurrency", "8", str(folder)],
            args.images,
            args.rounds,
            1.10,
            warmup,
        )
        compare(
            f"3. {args.images} JPEGs 640x480, 8 in flight, --transport grpc",
            [*app, "--concurrency", "8", "--transport", "grpc", str(folder)],
            [*plain, "--concurrency", "8", str(folder)],
            args.images,
            args.rounds,
            0.95,
            warmup,
        )
        shm_checks(url, str(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
