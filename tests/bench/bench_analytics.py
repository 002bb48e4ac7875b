"""Cost of the analytics per frame: `StreamAnalytics.update` with 50 tracked objects, 4 lines
and 4 zones (one of them concave) on 1080p, with and without a heat map, and the heat map's
overlay drawn over a 1080p frame (what a viewer would pay to show it).

The objects wander across the frame (bouncing off its edges), so lines are crossed and zones
entered and left all along: the figures include the events' cost.

Run: .venv/bin/python tests/bench/bench_analytics.py [--frames 900] [--rounds 5]
--smoke: 20 frames, 1 round (seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

from app.analytics.heatmap import HeatMap
from app.analytics.stream import StreamAnalytics
from app.analytics.zones_file import ZonesConfig
from app.inference.result import Detection

WIDTH, HEIGHT, FPS = 1920, 1080, 30.0
TRACKS = 50
ZONES = ZonesConfig.from_dict(
    {
        "lines": [
            {"name": "v1", "a": [480, 0], "b": [480, 1080]},
            {"name": "v2", "a": [1440, 100], "b": [1440, 980]},
            {"name": "h1", "a": [0, 540], "b": [1920, 540]},
            {"name": "diagonal", "a": [200, 900], "b": [1700, 150]},
        ],
        "zones": [
            {"name": "top_left", "polygon": [[50, 50], [700, 50], [700, 450], [50, 450]]},
            {"name": "bottom_right", "polygon": [[1200, 600], [1880, 600], [1880, 1040], [1200, 1040]]},
            {
                "name": "u_shape",
                "polygon": [
                    [700, 500],
                    [900, 500],
                    [900, 800],
                    [1000, 800],
                    [1000, 500],
                    [1200, 500],
                    [1200, 1000],
                    [700, 1000],
                ],
            },
            {"name": "triangle", "polygon": [[1300, 80], [1850, 80], [1575, 500]]},
        ],
    }
)


def wandering(frames: int, seed: int = 7) -> list[list[Detection]]:
    """TRACKS boxes moving at 2-12 px per frame, bouncing off the frame's edges."""
    rng = np.random.default_rng(seed)
    position = rng.uniform((100, 100), (WIDTH - 100, HEIGHT - 100), (TRACKS, 2))
    velocity = rng.uniform(-12, 12, (TRACKS, 2))
    size = rng.uniform((40, 80), (120, 240), (TRACKS, 2))
    out = []
    for _ in range(frames):
        position += velocity
        for axis, limit in ((0, WIDTH), (1, HEIGHT)):
            bounce = (position[:, axis] < 60) | (position[:, axis] > limit - 60)
            velocity[bounce, axis] *= -1
        boxes = np.concatenate((position - size / 2, position + size / 2), axis=1)
        out.append(
            [
                Detection(tuple(map(float, box)), 0.9, i % 3, f"class {i % 3}", track_id=i + 1)  # type: ignore[arg-type]
                for i, box in enumerate(boxes)
            ]
        )
    return out


def one_round(frames: list[list[Detection]], heatmap: bool) -> tuple[list[float], int]:
    heat = HeatMap(WIDTH, HEIGHT, window_s=300.0) if heatmap else None
    analytics = StreamAnalytics(ZONES, frame_period_s=1 / FPS, heatmap=heat)
    times, events = [], 0
    for i, detections in enumerate(frames):
        t0 = time.perf_counter()
        events += len(analytics.update(i, i / FPS, detections))
        times.append((time.perf_counter() - t0) * 1000)
    return times, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=900)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="20 frames, 1 round: seconds, figures meaningless"
    )
    args = parser.parse_args()
    if args.smoke:
        args.frames, args.rounds = 20, 1
    frames = wandering(args.frames)
    for heatmap in (False, True):
        medians, p95s, events = [], [], 0
        for _ in range(args.rounds):
            times, events = one_round(frames, heatmap)
            medians.append(float(np.median(times)))
            p95s.append(float(np.percentile(times, 95)))
        what = "with a heat map" if heatmap else "no heat map"
        print(
            f"{TRACKS} tracks, 4 lines, 4 zones, {what}: update median {statistics.median(medians):.3f} ms, "
            f"p95 {statistics.median(p95s):.3f} ms per frame ({events} events in {args.frames} frames, "
            f"median of {args.rounds} rounds)"
        )
    heat = HeatMap(WIDTH, HEIGHT)
    one_round_heat = StreamAnalytics(ZONES, frame_period_s=1 / FPS, heatmap=heat)
    for i, detections in enumerate(frames):
        one_round_heat.update(i, i / FPS, detections)
    background = np.full((HEIGHT, WIDTH, 3), 120, np.uint8)
    renders = []
    for _ in range(max(3, args.rounds * 2)):
        t0 = time.perf_counter()
        heat.render(background)
        renders.append((time.perf_counter() - t0) * 1000)
    layers = []
    for _ in range(max(3, args.rounds * 2)):
        t0 = time.perf_counter()
        heat.layer_rgba()
        layers.append((time.perf_counter() - t0) * 1000)
    print(
        f"heat map 1920x1080: blended over a frame (render) median {statistics.median(renders):.1f} ms; "
        f"as an RGBA layer to paint scaled ({heat.cols * 4}x{heat.rows * 4}) median "
        f"{statistics.median(layers):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
