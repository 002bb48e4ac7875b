"""Timing of the pure (no network) steps: `python tests/bench/bench_pure.py [--runs 50]`.

Not a pytest module (no test_ prefix). Prints the median of --runs runs, in milliseconds, of
- decode + NMS of a realistic random YOLOv8 [1, 84, 8400] output (a few hundred candidates
  above the 0.25 threshold, in clusters like real objects),
- letterbox of a 1920x1080 frame to 640x640, and the full preprocess to a FP32 NCHW tensor;
- an Ultralytics classifier's input (its classify transforms: Pillow's bilinear resize of the
  shorter side, ported to numpy, then the centre crop) from a 640x480 and a 1920x1080 frame
  to 224x224.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.inference.decoding.center_crop import center_crop
from app.inference.decoding.decoders import decode_yolov8
from app.inference.decoding.letterbox import letterbox
from app.inference.profile_kinds import OutputFormat, Preprocess
from app.inference.profiles.profile import ModelProfile, preprocess

RUNS = 50
SMOKE_RUNS = 2


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def yolov8_output(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    out = np.zeros((1, 84, 8400), np.float32)
    out[0, 0:2] = rng.uniform(0, 640, (2, 8400))
    out[0, 2:4] = rng.uniform(8, 160, (2, 8400))
    out[0, 4:] = rng.uniform(0, 0.1, (80, 8400))  # background noise below threshold
    # 30 objects, each seen by ~12 neighbouring candidates with jittered boxes and scores.
    cols = rng.choice(8400, 360, replace=False)
    for k, obj in enumerate(np.array_split(cols, 30)):
        centre, size, cls = rng.uniform(50, 590, 2), rng.uniform(30, 200, 2), k % 80
        out[0, 0:2, obj] = centre + rng.normal(0, 4, (len(obj), 2))
        out[0, 2:4, obj] = size * rng.uniform(0.9, 1.1, (len(obj), 2))
        out[0, 4 + cls, obj] = rng.uniform(0.3, 0.95, len(obj))
    return out, int((out[0, 4:].max(axis=0) >= 0.25).sum())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--smoke", action="store_true", help=f"{SMOKE_RUNS} runs each: seconds, figures meaningless"
    )
    args = parser.parse_args()
    runs = SMOKE_RUNS if args.smoke else args.runs
    rng = np.random.default_rng(0)
    out, candidates = yolov8_output(rng)
    n_boxes = len(decode_yolov8(out, 0.25, 0.45)[0])
    decode = median_ms(lambda: decode_yolov8(out, 0.25, 0.45), runs)
    frame = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    lb = median_ms(lambda: letterbox(frame, (640, 640), 114), runs)
    profile = ModelProfile(
        input_name="images", input_layout="NCHW", input_dtype="FP32", input_size=(640, 640),
        has_batch_dim=True, preprocess=Preprocess.LETTERBOX, output_format=OutputFormat.YOLOV8,
        output_names=("output0",),
    )  # fmt: skip
    pre = median_ms(lambda: preprocess(frame, profile), runs)
    small = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    crops = [median_ms(functools.partial(center_crop, f, (224, 224)), runs) for f in (small, frame)]
    print(f"decode+NMS YOLOv8 [1,84,8400], {candidates} candidates -> {n_boxes} boxes: {decode:.2f} ms")
    print(f"letterbox 1920x1080 -> 640x640: {lb:.2f} ms")
    print(f"preprocess 1920x1080 -> FP32 [1,3,640,640]: {pre:.2f} ms")
    print(f"classifier centre crop to 224x224: 640x480 {crops[0]:.2f} ms, 1920x1080 {crops[1]:.2f} ms")
    print(f"(median of {runs} runs each)")


if __name__ == "__main__":
    main()
