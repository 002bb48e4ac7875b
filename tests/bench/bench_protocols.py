"""HTTP/REST against gRPC on one embedded server, with and without shared memory: the same
1920x1080 MJPG video and folder of 640x480 JPEGs as bench_speed.py, each through
`python -m app infer` as whole processes, the four ways alternating round by round (medians):

    gRPC, tensors in the messages   (--url HOST:GRPC --transport grpc)
    gRPC, shared memory             (--url HOST:GRPC --transport shm)
    HTTP, tensors in the messages   (--url http://HOST:HTTP --transport grpc; binary tensors)
    HTTP, shared memory             (--url http://HOST:HTTP --transport shm)

    python tests/bench/bench_protocols.py [--frames 300] [--images 1000] [--rounds 3]
                                          [--url HOST:GRPC --http-url HOST:HTTP]

Not a pytest module (timings belong in a benchmark, not in tests). --url/--http-url: the two
ports of an existing server with the face detector instead of the embedded one. --smoke: 10
frames (the video only), one round, no warm-up (seconds; what `make test` runs so the script
cannot rot).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.resources import model_repository  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402
from tests.bench.bench_infer_vs_plain import make_images, timed  # noqa: E402
from tests.bench.bench_speed import make_video  # noqa: E402

WAYS = [
    ("gRPC", "grpc", "in the messages", "grpc"),
    ("gRPC", "grpc", "shared memory", "shm"),
    ("HTTP", "http", "in the messages", "grpc"),
    ("HTTP", "http", "shared memory", "shm"),
]


def measure(title: str, count: int, urls: dict[str, str], args: list[str], rounds: int, warmup: bool) -> None:
    """One input, the four ways: throughput and the client's CPU per way (medians)."""
    infer = [sys.executable, "-m", "app", "infer"]
    commands = {
        (scheme, transport): [*infer, "--url", urls[scheme], "--transport", transport, *args]
        for _label, scheme, _what, transport in WAYS
    }
    if warmup:  # the server's instances, the page cache
        for command in commands.values():
            timed(command)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in commands}
    for _ in range(rounds):
        for key, command in commands.items():
            runs[key].append(timed(command))
    print(f"{title}:", flush=True)
    base = statistics.median(r[0] for r in runs[("grpc", "grpc")])
    for label, scheme, what, transport in WAYS:
        seconds = statistics.median(r[0] for r in runs[(scheme, transport)])
        cpu = statistics.median(r[1] for r in runs[(scheme, transport)])
        print(
            f"  {label:<4} {what:<16} {count / seconds:7.1f}/s  ({seconds:6.2f} s, client CPU "
            f"{cpu:6.2f} s)  {base / seconds:4.2f}x gRPC in the messages",
            flush=True,
        )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--url", help="an existing server's gRPC HOST:PORT (with --http-url)")
    p.add_argument("--http-url", help="the same server's HTTP HOST:PORT")
    p.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = p.parse_args()
    if bool(args.url) != bool(args.http_url):
        p.error("--url and --http-url go together (the two ports of one server)")
    if args.smoke:
        args.frames, args.images, args.rounds = 10, 8, 1
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-protocols-"))
        video, folder = Path(tmp) / "walk1080.avi", Path(tmp) / "jpegs"
        folder.mkdir()
        make_video(video, args.frames)
        make_images(folder, args.images)
        if args.url:
            grpc, http = args.url, args.http_url
        else:
            server = stack.enter_context(EmbeddedServer(model_repository()))
            grpc, http = server.grpc_url, server.http_url
        urls = {"grpc": grpc, "http": f"http://{http.removeprefix('http://')}"}
        print(
            f"server gRPC {grpc}, HTTP {http}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
            f"median of {args.rounds} rounds",
            flush=True,
        )
        warmup = not args.smoke
        measure(
            f"1080p video, {args.frames} frames, 4 in flight",
            args.frames,
            urls,
            ["--concurrency", "4", str(video)],
            args.rounds,
            warmup,
        )
        if args.smoke:  # the folder goes through the same four ways: the video is enough here
            return 0
        measure(
            f"{args.images} JPEGs 640x480, 8 in flight",
            args.images,
            urls,
            ["--concurrency", "8", str(folder)],
            args.rounds,
            warmup,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
