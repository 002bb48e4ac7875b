"""What drawing the annotations costs a recording, per frame: `python tests/bench/bench_render.py`.

Not a pytest module. The recorder's thread builds each frame's draw list (app/drawing) and
paints it with the QPainter backend (app/ui/view/painter.py) before encoding; this prints the
median of that step (draw list + paint, the frame copied as the recorder copies it) next to the
encoding it precedes (RGB->BGR and an mp4v VideoWriter.write), for frames such as the bundled and
common models give:
- face_detector 640x480: one face box with its 6 landmarks;
- detections 1280x720: 10 boxes with labels;
- pose 1280x720: 5 people with 17 keypoints and the COCO skeleton;
- person_segmentation 640x480: one semantic mask over a third of the frame;
- YOLOv8-seg 1920x1080: 20 instance masks with their boxes;
- tracking 640x480: 5 boxes with 30-point trails.

Run: .venv/bin/python tests/bench/bench_render.py [--runs 50] [--smoke]
(--smoke: 3 runs of each, seconds in all; figures printed, not meaningful).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cv2
import numpy as np
from PySide6.QtGui import QGuiApplication

from app.drawing.draw_list import FrozenTrail
from app.drawing.style import AnnotationStyle
from app.inference.decoding.keypoints import COCO_SKELETON
from app.inference.masks import BinaryMask
from app.inference.result import Detection, SemanticMask
from app.pipeline.recording import LiveRecording
from app.ui.view.painter import render_rgb_in_place
from tests.bench.bench_pure import median_ms


@dataclass
class Scene:
    name: str
    image: np.ndarray
    detections: list[Detection]
    masks: list[SemanticMask]
    style: AnnotationStyle
    trails: tuple[FrozenTrail, ...] = ()


def _ellipse(w: int, h: int, cx: float, cy: float, rx: float, ry: float) -> BinaryMask:
    y, x = np.ogrid[:h, :w]
    return BinaryMask.from_full(((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0)


def scenes(rng: np.random.Generator) -> list[Scene]:
    def frame(w: int, h: int) -> np.ndarray:
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)

    def box(w: int, h: int, size: float = 200) -> tuple[float, float, float, float]:
        x, y = rng.uniform(0, w - size), rng.uniform(0, h - size)
        return x, y, x + rng.uniform(size / 3, size), y + rng.uniform(size / 3, size)

    face_points = tuple((260.0 + 20 * i, 200.0 + 10 * (i % 2), 0.9) for i in range(6))
    face = Detection((240.0, 160.0, 400.0, 330.0), 0.93, 0, "face", face_points)
    boxes = [Detection(box(1280, 720), 0.8, i, f"class {i}") for i in range(10)]
    people = []
    for _ in range(5):
        x1, y1, x2, y2 = box(1280, 720, 300)
        points = tuple((rng.uniform(x1, x2), rng.uniform(y1, y2), rng.uniform(0.3, 1.0)) for _ in range(17))
        people.append(Detection((x1, y1, x2, y2), 0.9, 0, "person", points))
    instances = []
    for i in range(20):
        x1, y1, x2, y2 = box(1920, 1080, 300)
        mask = _ellipse(1920, 1080, (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2)
        instances.append(Detection((x1, y1, x2, y2), 0.8, i % 80, f"class {i}", None, mask))
    person = SemanticMask(0, "person", _ellipse(640, 480, 320, 300, 120, 180))
    tracked = [Detection(box(640, 480, 120), 0.8, 0, "car", track_id=i + 1) for i in range(5)]
    trails = tuple(
        FrozenTrail(i + 1, tuple((100.0 + 80 * i + 2 * k, 400.0 - 6 * k) for k in range(30)))
        for i in range(5)
    )
    plain = AnnotationStyle()
    return [
        Scene("face_detector 640x480, 1 box + 6 landmarks", frame(640, 480), [face], [], plain),
        Scene("detections 1280x720, 10 boxes", frame(1280, 720), boxes, [], plain),
        Scene(
            "pose 1280x720, 5 x 17 keypoints + skeleton",
            frame(1280, 720),
            people,
            [],
            AnnotationStyle(skeleton=COCO_SKELETON),
        ),
        Scene("person_segmentation 640x480, 1 semantic mask", frame(640, 480), [], [person], plain),
        Scene("YOLOv8-seg 1920x1080, 20 instance masks", frame(1920, 1080), instances, [], plain),
        Scene("tracking 640x480, 5 boxes + 30-point trails", frame(640, 480), tracked, [], plain, trails),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--smoke", action="store_true", help="3 runs each: checks the script runs")
    args = parser.parse_args()
    runs = 3 if args.smoke else args.runs
    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    recording = LiveRecording(paint=render_rgb_in_place)
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        print(f"{'frame':48s} {'annotate':>9s} {'encode':>8s}  (ms per frame, median of {runs})")
        for scene in scenes(np.random.default_rng(0)):
            h, w = scene.image.shape[:2]

            def annotate(s: Scene = scene) -> np.ndarray:
                return recording.annotated(s.image, s.detections, s.masks, None, s.style, s.trails)

            fourcc = cv2.VideoWriter.fourcc(*"mp4v")
            writer = cv2.VideoWriter(str(Path(tmp) / "bench.mp4"), fourcc, 30, (w, h))
            try:

                def encode(s: Scene = scene, out: cv2.VideoWriter = writer) -> None:
                    out.write(cv2.cvtColor(s.image, cv2.COLOR_RGB2BGR))

                drawn, encoded = median_ms(annotate, runs), median_ms(encode, runs)
            finally:
                writer.release()
            print(f"{scene.name:48s} {drawn:9.2f} {encoded:8.2f}")
    del app


if __name__ == "__main__":
    main()
