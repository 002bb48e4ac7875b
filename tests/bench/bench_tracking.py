"""Cost of tracking per frame: `ObjectTracker.update` (Norfair) with 1, 5 and 20 moving objects.

Run: .venv/bin/python tests/bench/bench_tracking.py [--frames 300]
--smoke: 10 frames (seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from app.inference.result import Detection
from app.pipeline.tracking import ObjectTracker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="10 frames: seconds, figures meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.frames = 10
    for n in (1, 5, 20):
        tracker = ObjectTracker()
        times = []
        for f in range(args.frames):
            detections = [
                Detection(
                    (10 + 3 * f + 100 * i, 50.0 + 20 * i, 90 + 3 * f + 100 * i, 130.0 + 20 * i), 0.9, 0, "x"
                )
                for i in range(n)
            ]
            t0 = time.perf_counter()
            tracker.update(detections, f)
            times.append((time.perf_counter() - t0) * 1000)
        p50, p95 = np.percentile(times, [50, 95])
        ids = len(tracker.book.tracks)
        print(
            f"{n:2d} objects, {args.frames} frames: update median {p50:.3f} ms, "
            f"p95 {p95:.3f} ms ({ids} tracks)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
