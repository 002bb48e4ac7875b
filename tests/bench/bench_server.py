"""Sustained throughput of the bundled face detector on the embedded server.

A plain tritonclient async loop (app.pipeline.plain_loops: no app pipeline on the client
side) sends 640x480 RGB frames at a fixed concurrency for a fixed time and prints frames/s
and latency percentiles. Run: .venv/bin/python tests/bench/bench_server.py [--seconds 20] [--concurrency 16]
[--url HOST:PORT]; --smoke: 1 s after 5 warm-up requests (what `make test` runs so the script
cannot rot).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.inference.protocol import parse_url
from app.pipeline.plain_loops import PlainGrpcLoop
from app.resources import model_repository, sample_image
from app.server.embedded import EmbeddedServer


def frame_640x480() -> np.ndarray:
    photo = cv2.cvtColor(cv2.imread(str(sample_image())), cv2.COLOR_BGR2RGB)
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[:, 80:560] = cv2.resize(photo, (480, 480))
    return frame


def run(url: str, seconds: float, concurrency: int, warmup: int = 50) -> None:
    loop = PlainGrpcLoop(parse_url(url), "face_detector")
    inputs = loop.inputs(frame_640x480()[None], "image", "UINT8")
    try:
        loop.run(1, itertools.repeat(inputs, warmup))
        figures = loop.run(concurrency, itertools.repeat(inputs), seconds=seconds)
    finally:
        loop.close()
    print(
        f"face_detector 640x480 concurrency {concurrency}: {figures.ok / figures.seconds:.0f} frames/s over "
        f"{figures.seconds:.1f} s ({figures.ok} ok, {figures.failed} failed); "
        f"latency p50 {figures.p50_ms:.1f} ms, p95 {figures.p95_ms:.1f} ms, p99 {figures.p99_ms:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--url", help="an existing server (default: start the embedded one)")
    parser.add_argument("--smoke", action="store_true", help="1 s: figures printed, meaningless")
    args = parser.parse_args()
    warmup = 5 if args.smoke else 50
    if args.smoke:
        args.seconds = 1.0
    if args.url:
        run(args.url, args.seconds, args.concurrency, warmup)
        return
    with EmbeddedServer(model_repository()) as server:
        run(server.grpc_url, args.seconds, args.concurrency, warmup)


if __name__ == "__main__":
    main()
