"""In the A/B compare window, when a labelled dataset is open in the viewer: each model's mAP on
it. "Run on the dataset" sends the dataset's images to both models; whenever a batch compare
ends, the pairs of the dataset's images are evaluated for each side (on the executor, the newest
asked for wins) and the compare panel shows mAP and mAP50 for A and B."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import Executor
from pathlib import Path

from PySide6.QtCore import QObject

from app.evaluation.datasets import Dataset, DatasetError
from app.evaluation.evaluate import evaluate_results, iou_type_problem
from app.evaluation.iou_type import IouType
from app.inference.result import InferenceResult
from app.pipeline.compare import Side
from app.ui.base.tasks import TaskSet
from app.ui.compare.compare_controller import CompareController
from app.ui.evaluation.evaluation_controller import EvaluationController, ModelFacts
from app.ui.evaluation.evaluation_panel import figure


def side_figures(
    dataset: Dataset,
    results: Mapping[int, InferenceResult],
    model: ModelFacts,
    class_map: dict[str, str] | None,
    iou_type: IouType,
) -> dict[str, str]:
    """One side's mAP and mAP50 on the dataset's images it answered (the executor)."""
    problem = iou_type_problem(iou_type, model.name, model.task, model.kpt_shape)
    if problem is not None:
        return {"mAP (dataset)": "n/a", "mAP50 (dataset)": problem}
    try:
        evaluation = evaluate_results(
            dataset,
            results,
            model.labels,
            class_map=class_map,
            iou_type=iou_type,
            keypoint_names=model.keypoint_names,
            keypoint_count=model.keypoint_count,
        )
    except DatasetError:
        return {"mAP (dataset)": "no class in common", "mAP50 (dataset)": "n/a"}
    stats = evaluation.coco.stats if evaluation.coco else {}
    return {"mAP (dataset)": figure(stats.get("map")), "mAP50 (dataset)": figure(stats.get("map50"))}


class CompareAccuracy(QObject):
    def __init__(
        self, evaluation: EvaluationController, compare: CompareController, executor: Executor, tasks: TaskSet
    ) -> None:
        super().__init__()
        self.evaluation, self.compare = evaluation, compare
        self._executor, self._tasks = executor, tasks
        self._token = 0
        self.figures: dict[Side, dict[str, str]] | None = None  # what the panel shows
        self.run_action = compare.window.toolbar.addAction("Run on the dataset")
        self.run_action.setToolTip("The images of the labelled dataset open in the viewer, to both models")
        self.run_action.setEnabled(False)
        self.run_action.triggered.connect(self.run_on_dataset)
        evaluation.starting.connect(lambda _roots: self.update())
        evaluation.evaluated.connect(self.update)
        compare.batch_done.connect(self.update)
        compare.ready.connect(self.update)

    def run_on_dataset(self) -> None:
        dataset = self.evaluation.dataset
        if dataset is not None:
            self.compare.open_paths([str(image.path) for image in dataset.images])

    def update(self) -> None:
        """The figures again (a dataset was opened, or a compare batch ended)."""
        dataset, choice = self.evaluation.dataset, self.evaluation.choice
        panel = self.compare.window.panel
        self.run_action.setEnabled(dataset is not None)
        self._token += 1
        if dataset is None or choice is None or not self.compare.active:
            self.figures = None
            panel.set_accuracy(None)
            return
        index = {str(Path(image.path)): i for i, image in enumerate(dataset.images)}
        results: dict[Side, dict[int, InferenceResult]] = {Side.A: {}, Side.B: {}}
        for pair in self.compare.pairs.values():
            i = index.get(str(Path(pair.source))) if pair.source is not None and pair.frame is None else None
            if i is not None:
                results[Side.A][i], results[Side.B][i] = pair.a, pair.b
        covered = len(results[Side.A])
        if not covered:
            self.figures = {}
            panel.set_accuracy({}, f"Open the dataset's images (Run on the dataset): {dataset.path}")
            return
        models = {side: ModelFacts.of(self.compare.sessions[side]) for side in Side}
        note = f"on {covered} of the {len(dataset.images)} images of {dataset.path}"
        self._tasks.spawn(self._evaluate(self._token, dataset, results, models, note), name="compare mAP")

    async def _evaluate(
        self,
        token: int,
        dataset: Dataset,
        results: dict[Side, dict[int, InferenceResult]],
        models: dict[Side, ModelFacts],
        note: str,
    ) -> None:
        loop = asyncio.get_running_loop()
        class_map, choice = self.evaluation.class_map, self.evaluation.choice
        assert choice is not None
        figures = {}
        for side in Side:
            figures[side] = await loop.run_in_executor(
                self._executor, side_figures, dataset, results[side], models[side], class_map, choice.iou_type
            )
        if token == self._token:
            self.figures = figures
            self.compare.window.panel.set_accuracy(figures, note)
