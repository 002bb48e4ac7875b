"""Evaluation's own cost on top of inference: `python tests/bench/bench_evaluate.py`.

Not a pytest module. A YOLO dataset of N images (default 1,000) with 10 boxes each is
written to a temporary folder, and N results of 10 detections (jittered boxes, random
scores, a few misses, false positives and wrong classes) are made in memory, as the model's
answers would be; then timed, best of --runs:
- reading the dataset (label files, image index);
- `evaluate_results`: ground truth and detections as COCO documents, faster-coco-eval's
  two evaluations, the operating points and the F1-best thresholds;
- the report: per class, the confusion matrix (its second matching), the worst images;
- the total, which must stay under 1 s for 1,000 images (README figure);
- an operating point at new score thresholds (what the viewer's score slider calls);
and, for comparison, pycocotools' own COCOeval on the same documents (no --smoke).

Run: .venv/bin/python tests/bench/bench_evaluate.py [--images 1000] [--runs 3] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.evaluation.datasets import load_dataset
from app.evaluation.evaluate import evaluate_results
from app.evaluation.report import model_report
from app.inference.result import Detection, InferenceResult, Status

CLASSES = ["person", "car", "dog"]
BOXES = 10
SIZE = (640, 480)


def make_dataset(folder: Path, images: int, rng: np.random.Generator) -> list[list[tuple[int, tuple]]]:
    """YOLO images/ + labels/ + data.yaml; returns each image's objects (class, box)."""
    (folder / "images").mkdir(parents=True)
    (folder / "labels").mkdir()
    (folder / "data.yaml").write_text("names: [" + ", ".join(CLASSES) + "]\n")
    tiny = np.full((8, 8, 3), 128, np.uint8)
    cv2.imwrite(str(folder / "tiny.png"), tiny)
    data = (folder / "tiny.png").read_bytes()
    w, h = SIZE
    truth = []
    for i in range(images):
        (folder / "images" / f"{i:05d}.png").write_bytes(data)  # the reader only needs the file
        objects, lines = [], []
        for _ in range(BOXES):
            c = int(rng.integers(len(CLASSES)))
            bw, bh = rng.uniform(20, 160), rng.uniform(20, 160)
            x1, y1 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            objects.append((c, (x1, y1, x1 + bw, y1 + bh)))
            lines.append(f"{c} {(x1 + bw / 2) / w:.6f} {(y1 + bh / 2) / h:.6f} {bw / w:.6f} {bh / h:.6f}")
        (folder / "labels" / f"{i:05d}.txt").write_text("\n".join(lines) + "\n")
        truth.append(objects)
    (folder / "tiny.png").unlink()
    return truth


def make_results(dataset_images: list, truth: list, rng: np.random.Generator) -> dict[int, InferenceResult]:
    """What a model would answer: each object found with jitter (10% missed, 5% another class),
    plus false positives, 10 detections per image."""
    by_name = {Path(img.path).stem: k for k, img in enumerate(dataset_images)}
    results = {}
    w, h = SIZE
    for i, objects in enumerate(truth):
        dets = []
        for c, (x1, y1, x2, y2) in objects:
            if rng.random() < 0.1:
                bw, bh = rng.uniform(20, 160), rng.uniform(20, 160)
                x1, y1 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
                x2, y2 = x1 + bw, y1 + bh  # a false positive instead of the object
            j = rng.normal(0, 4, 4)
            if rng.random() < 0.05:
                c = (c + 1) % len(CLASSES)
            box = (x1 + j[0], y1 + j[1], x2 + j[2], y2 + j[3])
            dets.append(Detection(box, float(rng.uniform(0.05, 1.0)), c, CLASSES[c]))
        index = by_name[f"{i:05d}"]
        results[index] = InferenceResult(
            f"r{i}", Status.OK, str(dataset_images[index].path), width=w, height=h, detections=dets
        )
    return results


def pycocotools_seconds(evaluation: Any) -> float:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = copy.deepcopy(evaluation.ground_truth.doc)
        gt.createIndex()
        dt = gt.loadRes(copy.deepcopy(evaluation.detections.anns))
        e = COCOeval(gt, dt, "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="a few seconds: 50 images, one run, no pycocotools"
    )
    args = parser.parse_args(argv)
    images, runs = (50, 1) if args.smoke else (args.images, args.runs)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        truth = make_dataset(Path(tmp) / "data", images, rng)
        best: dict[str, tuple[float, float]] = {}  # name -> (wall, cpu) seconds, best of the runs
        results = None
        for _ in range(runs):
            marks = [(time.perf_counter(), time.process_time())]
            dataset = load_dataset(Path(tmp) / "data")
            marks.append((time.perf_counter(), time.process_time()))
            if results is None:
                results = make_results(dataset.images, truth, rng)
            marks.append((time.perf_counter(), time.process_time()))
            evaluation = evaluate_results(dataset, results, CLASSES)
            marks.append((time.perf_counter(), time.process_time()))
            report = model_report(evaluation, "synthetic")
            marks.append((time.perf_counter(), time.process_time()))
            spans = {
                "read the dataset": (marks[0], marks[1]),
                "evaluate_results": (marks[2], marks[3]),
                "report (per class, confusion, worst)": (marks[3], marks[4]),
            }
            took = {name: (b[0] - a[0], b[1] - a[1]) for name, (a, b) in spans.items()}
            took["total"] = (sum(v[0] for v in took.values()), sum(v[1] for v in took.values()))
            for name, (wall, cpu) in took.items():
                old = best.get(name, (np.inf, np.inf))
                best[name] = (min(old[0], wall), min(old[1], cpu))
    print(f"evaluation of {images} images x {BOXES} boxes, {len(CLASSES)} classes (best of {runs}):")
    print(f"  {'':<38} {'wall':>8}    {'CPU':>8}  (CPU: this process only; wall grows with other load)")
    for name, (wall, cpu) in best.items():
        print(f"  {name:<38} {wall * 1000:8.1f} ms {cpu * 1000:8.1f} ms")
    slider = []
    for k in range(20):  # what a score slider calls: every class and image at new thresholds
        t0 = time.perf_counter()
        evaluation.operating_point(k / 20)
        slider.append(time.perf_counter() - t0)
    print(f"  an operating point at new thresholds   {min(slider) * 1000:8.2f} ms (wall, best of 20)")
    print(f"  mAP {report['metrics']['map']:.3f}, mAP50 {report['metrics']['map50']:.3f} (a sanity check)")
    if not args.smoke:
        reference = pycocotools_seconds(evaluation) * 1000
        print(f"  pycocotools' own COCOeval, same data   {reference:8.1f} ms (wall)")
        wall, cpu = best["total"]
        verdict = "within" if cpu < 1.0 else "OVER"
        print(f"  budget 1 s for 1,000 images: {verdict} (CPU {cpu:.3f} s, wall {wall:.3f} s for {images})")
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
