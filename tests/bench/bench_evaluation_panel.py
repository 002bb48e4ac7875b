"""What the viewer's Evaluation panel costs on the GUI thread: `python tests/bench/bench_evaluation_panel.py`.

Not a pytest module. The synthetic evaluation of bench_evaluate.py (N images of 10 boxes, 3
classes; default 1,000) is shown in the panel (offscreen), then timed, best of --runs:
- a step of the score slider: the operating point, the per-class table, the PR curves' points,
  the picture's marks (what happens on the GUI thread for each step while dragging);
- once the slider rests: the thumbnails' order by errors (on the GUI thread) and the confusion
  matrix (on the executor: the GUI thread does not wait for it);
- a confusion matrix cell chosen: the batch narrowed to its images.

Run: .venv/bin/python tests/bench/bench_evaluation_panel.py [--images 1000] [--runs 5] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication

from app.evaluation.datasets import load_dataset
from app.evaluation.evaluate import evaluate_results
from app.evaluation.report import model_report
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.evaluation.evaluation_controller import EvaluationController
from app.ui.evaluation.evaluation_panel import EvaluationPanel
from app.ui.state.viewer_state import ViewerState
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget
from tests.bench.bench_evaluate import BOXES, CLASSES, make_dataset, make_results


def best_ms(runs: int, work: Callable[[int], object]) -> float:
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        work(i)
        times.append(time.perf_counter() - t0)
    return min(times) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a few seconds: 50 images, 2 runs")
    args = parser.parse_args(argv)
    images, runs = (50, 2) if args.smoke else (args.images, args.runs)
    app = QApplication.instance() or QApplication(sys.argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as executor:
        truth = make_dataset(Path(tmp) / "data", images, rng)
        dataset = load_dataset(Path(tmp) / "data")
        evaluation = evaluate_results(dataset, make_results(dataset.images, truth, rng), CLASSES)
        report = model_report(evaluation, "synthetic")
        state, view, panel = ViewerState(), ImageView(), EvaluationPanel()
        controller = EvaluationController(
            state, view, ThresholdsWidget(), panel, executor, TaskSet(), GuiBridge(), lambda _m, _e: None
        )
        for image in dataset.images:
            state.add_entry(str(image.path))
        controller.show_evaluation(evaluation, report, "done")
        view.set_image(np.zeros((480, 640, 3), np.uint8))
        worst = str(dataset.images[evaluation.operating_point().worst_images(1)[0]].path)
        state.select(worst)
        state.set_shown(worst)  # its marks are drawn at every step
        panel.sort_check.setChecked(True)
        step = best_ms(runs, lambda i: controller.set_threshold(0.3 + 0.01 * i))
        order = best_ms(runs, lambda i: controller.apply_order())
        confusion = best_ms(runs, lambda i: evaluation.confusion(0.3 + 0.01 * i))
        controller.confusion = evaluation.confusion(None)
        cell = best_ms(runs, lambda i: controller.select_cell((i % len(CLASSES), len(CLASSES))))
        app.processEvents()
    print(
        f"the Evaluation panel, {images} images x {BOXES} boxes, {len(CLASSES)} classes "
        f"(best of {runs}, wall):"
    )
    print(f"  a slider step (GUI thread)                  {step:8.2f} ms")
    print(f"  thumbnails by errors, once it rests (GUI)   {order:8.2f} ms")
    print(f"  confusion matrix, once it rests (executor)  {confusion:8.2f} ms")
    print(f"  a confusion matrix cell chosen (GUI)        {cell:8.2f} ms")
    print(f"  marks on the worst image: {len(view.mark_items())}")
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
