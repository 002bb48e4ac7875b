"""Sustained throughput of the bundled face detector on the embedded server.

A plain tritonclient async loop (no app code on the client side) sends 640x480 RGB
frames at a fixed concurrency for a fixed time and prints frames/s and latency
percentiles. Run: .venv/bin/python tests/bench/bench_server.py [--seconds 20] [--concurrency 16]
[--url HOST:PORT]; --smoke: 1 s after 5 warm-up requests (what `make test` runs so the script
cannot rot).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import tritonclient.grpc as grpcclient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.resources import model_repository, sample_image
from app.server.embedded import EmbeddedServer


def frame_640x480() -> np.ndarray:
    photo = cv2.cvtColor(cv2.imread(str(sample_image())), cv2.COLOR_BGR2RGB)
    frame = np.full((480, 640, 3), 90, np.uint8)
    frame[:, 80:560] = cv2.resize(photo, (480, 480))
    return frame


def run(url: str, seconds: float, concurrency: int, warmup: int = 50) -> None:
    client = grpcclient.InferenceServerClient(url)
    image = frame_640x480()
    inp = grpcclient.InferInput("image", [1, 480, 640, 3], "UINT8")
    inp.set_data_from_numpy(image[None])
    slots = threading.Semaphore(concurrency)
    lock = threading.Lock()
    latencies: list[float] = []
    errors = [0]

    def send() -> None:
        started = time.perf_counter()

        def done(result: object, error: object) -> None:
            with lock:
                if error is None:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors[0] += 1
            slots.release()

        client.async_infer("face_detector", [inp], done)

    for _ in range(warmup):
        client.infer("face_detector", [inp])
    begin = time.perf_counter()
    while time.perf_counter() - begin < seconds:
        slots.acquire()
        send()
    for _ in range(concurrency):
        slots.acquire()
    elapsed = time.perf_counter() - begin
    client.close()
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    print(
        f"face_detector 640x480 concurrency {concurrency}: {len(latencies) / elapsed:.0f} frames/s over "
        f"{elapsed:.1f} s ({len(latencies)} ok, {errors[0]} failed); latency p50 {p50:.1f} ms, "
        f"p95 {p95:.1f} ms, p99 {p99:.1f} ms"
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
