"""The viewer's evaluation: a dataset's images through `DatasetRun` (the pipeline `evaluate`
runs) on the viewer's session, shown as the viewer's batch (thumbnails, browsing, the log and
the statistics get every result as a batch's); then the evaluation and its report on the
executor, and the Evaluation panel, the marks on the picture (labelled objects dashed beside the
model's boxes, false positives and misses marked) and the thumbnails (a confusion matrix cell's
images only, most errors first) at the operating point the panel's score slider sets.

Threads: the dataset is read on the executor; `DatasetRun` feeds on a thread of its own and its
results come back through the bridge bound to the run that made them (a replaced or cancelled
run's late results are dropped); the evaluation (COCOeval) and each confusion matrix run on the
executor, the newest asked for wins. Operating points are cheap (well under a millisecond for
1,000 images): computed on the GUI thread as the slider moves."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal
from superqt.utils import QSignalDebouncer

from app.evaluation.classes import ClassMapError, read_class_map
from app.evaluation.confusion import ConfusionMatrix
from app.evaluation.datasets import Dataset, DatasetError, load_dataset
from app.evaluation.evaluate import Evaluation, evaluate_results, iou_type_problem
from app.evaluation.export import export_report, per_class_rows
from app.evaluation.image_marks import image_marks
from app.evaluation.operating import OperatingPoint
from app.evaluation.report import model_report
from app.evaluation.run import DatasetRun
from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts
from app.sources.files import file_identity
from app.ui.base.bridge import GuiBridge
from app.ui.base.colors import class_color
from app.ui.base.tasks import TaskSet
from app.ui.evaluation.evaluate_dialog import EvaluationChoice
from app.ui.evaluation.evaluation_panel import STEPS, EvaluationPanel, figure
from app.ui.evaluation.heat_map import cell_meaning
from app.ui.evaluation.pr_plot import Curve
from app.ui.state.viewer_state import ViewerState
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget

log = logging.getLogger(__name__)

WINDOW = 8  # requests in flight, as `evaluate`'s default --concurrency
SETTLE_MS = 120  # slider drags: the order and the confusion matrix once the slider rests
JOIN_S = 2.0


@dataclass(frozen=True)
class ModelFacts:
    """What the evaluation needs of the model, read from its session on the GUI thread."""

    name: str
    labels: list[str]
    keypoint_names: list[str]
    keypoint_count: int | None
    task: str
    kpt_shape: tuple[int, int] | None

    @classmethod
    def of(cls, session: TritonSession) -> ModelFacts:
        profile = session.profile
        info = session.info
        return cls(
            info.name if info is not None else (session.spec.model or "?"),
            list(profile.labels),
            list(profile.keypoint_names),
            profile.kpt_shape[0] if profile.kpt_shape else None,
            str(profile.task),
            profile.kpt_shape,
        )


def load(choice: EvaluationChoice, model: ModelFacts) -> tuple[Dataset, dict[str, str] | None]:
    """The dataset and the class map (the executor: both read files)."""
    class_map = read_class_map(choice.class_map) if choice.class_map else None
    dataset = load_dataset(
        choice.dataset,
        choice.fmt,
        choice.images,
        model_labels=model.labels,
        keypoint_names=model.keypoint_names,
    )
    return dataset, class_map


def dataset_root(dataset: Dataset) -> str:
    """The folder the batch's names are relative to."""
    path = Path(dataset.path)
    return str(path if path.is_dir() else path.parent)


class EvaluationController(QObject):
    starting = Signal(list)  # the folders of the dataset: the batch is replaced by its images
    entry_added = Signal(str, object, object)  # key, thumbnail, FileIdentity (as BatchRunner's)
    result = Signal(object)  # every image's result, as a batch's
    run_started = Signal(int)  # images
    run_progress = Signal(int)  # images answered
    run_finished = Signal(int, object, float)  # 0, BatchCounts, seconds (as BatchRunner.finished)
    evaluated = Signal()  # `evaluation` and `report` are ready and shown

    def __init__(
        self,
        state: ViewerState,
        view: ImageView,
        thresholds: ThresholdsWidget,
        panel: EvaluationPanel,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
    ) -> None:
        super().__init__()
        self.state, self.view, self.sliders, self.panel = state, view, thresholds, panel
        self._executor, self._tasks, self._bridge, self._report = executor, tasks, bridge, report
        self.choice: EvaluationChoice | None = None
        self.model: ModelFacts | None = None
        self.dataset: Dataset | None = None
        self.class_map: dict[str, str] | None = None
        self.evaluation: Evaluation | None = None
        self.report: dict[str, Any] | None = None
        self.threshold: float | None = None  # the operating point: None = each class's best F1
        self.point: OperatingPoint | None = None
        self.confusion: ConfusionMatrix | None = None
        self.cell: tuple[int, int] | None = None  # the confusion matrix cell narrowing the batch
        self.run: DatasetRun | None = None
        self._thread: threading.Thread | None = None
        self._run_id = 0
        self._cancelled = False
        self._confusion_id = 0
        self._index: dict[str, int] = {}  # batch key -> dataset image index
        self._evaluated: set[int] = set()  # the image indices the model answered
        # Debounced: the slider's steps settle once it rests for SETTLE_MS.
        self._settle_later = QSignalDebouncer(parent=self)
        self._settle_later.setTimeout(SETTLE_MS)
        self._settle_later.triggered.connect(self._settle)
        panel.threshold_changed.connect(self.set_threshold)
        panel.best_requested.connect(lambda: self.set_threshold(None))
        panel.cancel_requested.connect(self.cancel)
        panel.sort_toggled.connect(lambda _on: self.apply_order())  # at once: a click
        panel.heat_map.cell_clicked.connect(self._cell_clicked)
        panel.show_all_requested.connect(lambda: self.select_cell(None))
        state.shown_changed.connect(self._draw_marks)

    # -- running ----------------------------------------------------------------------------------------
    def active(self) -> bool:
        return self.run is not None

    async def start(self, choice: EvaluationChoice, session: TritonSession) -> bool:
        """Read the dataset, then run its images through `session` as the viewer's batch; the
        evaluation follows when every image has its result. False (and a message) when the
        dataset cannot be used."""
        model = ModelFacts.of(session)
        problem = iou_type_problem(choice.iou_type, model.name, model.task, model.kpt_shape)
        if problem is not None:
            self._fail(f"Evaluate: {choice.iou_type}: {problem}")
            return False
        self.panel.set_running(f"{model.name} on {Path(choice.dataset).name}", 0)
        try:
            dataset, class_map = await asyncio.get_running_loop().run_in_executor(
                self._executor, load, choice, model
            )
        except (DatasetError, ClassMapError, OSError) as e:
            self._fail(f"Evaluate: {e}")
            return False
        await self.stop()
        self._run_id += 1
        run_id = self._run_id
        self.choice, self.model, self.dataset, self.class_map = choice, model, dataset, class_map
        self._forget_evaluation()
        self._index = {str(image.path): i for i, image in enumerate(dataset.images)}
        self.panel.set_running(
            f"{model.name} on {Path(dataset.path).name} ({dataset.format})", len(dataset.images)
        )
        self.panel.title.setToolTip(dataset.path)
        roots = [dataset_root(dataset)] + ([choice.images] if choice.images else [])
        self.starting.emit(roots)
        wrap = self._bridge.wrap
        entry = wrap(functools.partial(self._on_entry, run_id))

        def thumbnail(source: str, image: np.ndarray) -> None:
            # The feeding thread, right after the image was read: stat here, never on the GUI
            # thread (as the batch runner does). The result belongs to this version of the file.
            entry(source, image, file_identity(source))

        self._cancelled = False
        self.run = DatasetRun(
            session,
            dataset,
            window=WINDOW,
            on_result=wrap(functools.partial(self._on_result, run_id)),
            on_started=wrap(functools.partial(self._on_started, run_id)),
            on_thumbnail=thumbnail,
        )
        self._thread = self.run.start(on_finished=wrap(functools.partial(self._on_finished, run_id)))
        return True

    def _fail(self, message: str) -> None:
        self._report(message, True)
        self.panel.set_finished(message, self.evaluation is not None)

    def cancel(self) -> None:
        """Stop the run (any image not answered yet is cancelled); the images answered are
        evaluated. Returns at once."""
        if self.run is not None:
            self._cancelled = True
            self.panel.cancel_button.setEnabled(False)
            self.run.cancel()

    async def stop(self) -> None:
        """Cancel a run in progress and wait (on the executor) for its thread to end; its late
        results are dropped."""
        run, thread = self.run, self._thread
        self.run, self._thread = None, None
        self._run_id += 1
        if run is not None:
            run.cancel()
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, thread.join, JOIN_S)

    def _on_entry(self, run_id: int, key: str, thumbnail: np.ndarray, identity: object) -> None:
        if run_id == self._run_id:
            self.entry_added.emit(key, thumbnail, identity)

    def _on_started(self, run_id: int, total: int) -> None:
        if run_id == self._run_id:
            self.run_started.emit(total)

    def _on_result(self, run_id: int, _index: int, result: InferenceResult) -> None:
        run = self.run
        if run_id != self._run_id or run is None:
            return
        self.result.emit(result)
        done = len(run.results)
        self.panel.set_progress(done, len(run.dataset.images))
        self.run_progress.emit(done)

    def _on_finished(self, run_id: int, run: DatasetRun) -> None:
        if run_id != self._run_id:
            return
        self.run, self._thread = None, None
        counts = run.counts or run.job.counts()
        self.run_finished.emit(0, counts, run.seconds)
        if run.error is not None:
            self._fail(f"Evaluate: the run stopped: {run.error}")
            return
        self._tasks.spawn(self._evaluate(run_id, run, counts, self._cancelled), name="evaluate")

    async def _evaluate(self, run_id: int, run: DatasetRun, counts: BatchCounts, cancelled: bool) -> None:
        model, choice = self.model, self.choice
        assert model is not None and choice is not None
        self.panel.status.setText("evaluating…")
        try:
            # wrap_future, not get_running_loop(): this task is spawned by a bridged callback and
            # its first step may be run by Qt events processed while the loop is not "running"
            # (seen in a test under load: "no running event loop", the evaluation lost).
            evaluation, report = await asyncio.wrap_future(
                self._executor.submit(self._evaluation_of, run, model, choice, cancelled)
            )
        except DatasetError as e:
            if run_id == self._run_id:
                self._fail(f"Evaluate: {e}")
            return
        if run_id != self._run_id:
            return
        answered = len(evaluation.evaluated)
        total = len(evaluation.dataset.images)
        if cancelled:
            status = (
                f"cancelled: the figures are those of the {answered} images answered before it (of {total})"
            )
        else:
            failed = len(evaluation.failed)
            status = f"done: {answered} images evaluated" + (
                f", {failed} failed (left out)" if failed else ""
            )
        self.show_evaluation(evaluation, report, status)

    def show_evaluation(self, evaluation: Evaluation, report: dict[str, Any], status: str) -> None:
        """Show a finished evaluation (`report`: its `model_report`) at each class's best F1."""
        self.evaluation, self.report, self.dataset = evaluation, report, evaluation.dataset
        self._index = {str(image.path): i for i, image in enumerate(evaluation.dataset.images)}
        self._evaluated = set(evaluation.evaluated)
        self.panel.show_report(report)
        self.threshold = None
        self.panel.set_slider(None)
        self._apply_point(sync_thresholds=True)
        self.panel.set_finished(status, True)
        self.evaluated.emit()

    def _evaluation_of(
        self, run: DatasetRun, model: ModelFacts, choice: EvaluationChoice, cancelled: bool
    ) -> tuple[Evaluation, dict[str, Any]]:
        evaluation = evaluate_results(
            run.dataset,
            dict(run.results),
            model.labels,
            class_map=self.class_map,
            iou_type=choice.iou_type,
            keypoint_names=model.keypoint_names,
            keypoint_count=model.keypoint_count,
        )
        report = model_report(evaluation, model.name, run.speed())
        if cancelled:  # as `evaluate` says of an interrupted run
            report["interrupted"] = True
            report["not_started"] = len(run.dataset.images) - len(run.results)
        return evaluation, report

    def _forget_evaluation(self) -> None:
        self.evaluation, self.report, self.point, self.confusion = None, None, None, None
        self.cell = None
        self.panel.heat_map.set_selected(None)
        self.view.set_marks(())

    # -- the operating point ---------------------------------------------------------------------------
    def set_threshold(self, value: float | None) -> None:
        """One score threshold for every class (None: each class's best F1): P/R/F1, the table,
        the PR curves' points, the marks and the thumbnails' order follow at once, the
        confusion matrix once the slider rests."""
        self.threshold = value
        self.panel.set_slider(value)
        if self.evaluation is not None:
            self._apply_point(sync_thresholds=True)

    def _apply_point(self, sync_thresholds: bool) -> None:
        evaluation = self.evaluation
        assert evaluation is not None
        self.point = point = evaluation.operating_point(self.threshold)
        self.panel.set_classes(per_class_rows(evaluation, self.threshold, point))
        total = point.total()
        self.panel.point_line.setText(
            f"All classes: precision {figure(total.precision)} · recall {figure(total.recall)} · "
            f"F1 {figure(total.f1)} · TP {total.tp} · FP {total.fp} · FN {total.fn}"
        )
        coco = evaluation.coco
        curves = []
        for k, name in enumerate(evaluation.classes.categories):
            c = point.classes[k]
            spot = (c.recall, c.precision) if c.recall is not None and c.precision is not None else None
            curves.append(
                Curve(
                    name,
                    class_color(k),
                    coco.recall_thresholds if coco else np.linspace(0, 1, 101),
                    coco.pr_curve(k) if coco else None,
                    coco.class_ap(k)[1] if coco else None,
                    spot,
                )
            )
        self.panel.pr_curves.set_curves(curves)
        finite = point.thresholds[np.isfinite(point.thresholds)]
        lowest = float(finite.min()) if finite.size else None
        if self.threshold is None:
            self.panel.set_slider(None, lowest)
        if sync_thresholds and lowest is not None:
            # The picture draws the detections the operating point keeps: the sliders' step
            # below the threshold, never above it (a best-F1 threshold is a detection's score).
            self.sliders.set_values(math.floor(lowest * STEPS + 1e-9) / STEPS, self.sliders.iou())
        self._draw_marks(self.state.shown_key)
        self._settle_later.throttle()

    def _settle(self) -> None:
        """Once the slider rests: the thumbnails' order (a thousand of them is a reorder worth
        not doing on every step) and the confusion matrix (on the executor)."""
        self.apply_order()
        if self.evaluation is not None:
            self._confusion_id += 1
            self._tasks.spawn(self._confusion(self._confusion_id), name="confusion matrix")

    async def _confusion(self, token: int) -> None:
        evaluation, threshold = self.evaluation, self.threshold
        if evaluation is None:
            return
        matrix = await asyncio.get_running_loop().run_in_executor(
            self._executor, evaluation.confusion, threshold
        )
        if token != self._confusion_id or evaluation is not self.evaluation:
            return  # a newer operating point asked for its own
        self.confusion = matrix
        self.panel.heat_map.set_matrix(matrix.labels, matrix.matrix)
        if self.cell is not None:
            self.select_cell(self.cell)  # the cell's images at the new operating point

    # -- the batch: a confusion matrix cell, most errors first -----------------------------------------
    def _cell_clicked(self, row: int, column: int) -> None:
        self.select_cell(None if row < 0 else (row, column))

    def select_cell(self, cell: tuple[int, int] | None) -> None:
        """Only the images of a confusion matrix cell in the thumbnails (None: all of them)."""
        matrix, dataset = self.confusion, self.dataset
        self.cell = cell
        self.panel.heat_map.set_selected(cell)
        self.panel.show_all_button.setEnabled(cell is not None)
        if cell is None or matrix is None or dataset is None:
            self.state.narrow(None)
            self.panel.cell_line.setText("Click a cell: only its images in the thumbnails")
            return
        images = matrix.images.get(cell, [])
        keys = {str(dataset.images[i].path) for i in images}
        meaning = cell_meaning(matrix.labels, *cell)
        count = int(matrix.matrix[cell])
        self.state.narrow(keys, f"{meaning} ({len(keys)} image{'s' * (len(keys) != 1)})")
        self.panel.cell_line.setText(
            f"{meaning}: {count} in {len(keys)} image{'s' * (len(keys) != 1)} (click it again for all)"
        )

    def cell_keys(self, cell: tuple[int, int]) -> set[str]:
        """The batch keys of a confusion matrix cell's images."""
        assert self.confusion is not None and self.dataset is not None
        return {str(self.dataset.images[i].path) for i in self.confusion.images.get(cell, [])}

    def apply_order(self) -> None:
        """The thumbnails most errors first at the operating point (the panel's check), or as
        they came."""
        point, dataset = self.point, self.dataset
        if not self.panel.sort_check.isChecked() or point is None or dataset is None:
            self.state.set_order(None)
            return
        errors = point.errors()
        order = sorted(
            range(len(dataset.images)), key=lambda i: (-int(errors[i]), -int(point.image_fn[i]), i)
        )
        self.state.set_order([str(dataset.images[i].path) for i in order])

    # -- the picture -------------------------------------------------------------------------------------
    def _draw_marks(self, key: str | None) -> None:
        evaluation, point = self.evaluation, self.point
        index = self._index.get(key) if key is not None else None
        if evaluation is None or point is None or index is None or index not in self._evaluated:
            self.view.set_marks(())
            return
        self.view.set_marks(image_marks(evaluation, point, index))

    # -- export --------------------------------------------------------------------------------------------
    async def export_to(self, folder: str) -> list[Path]:
        """The report's files in `folder` (on the executor); [] and a message when it fails."""
        evaluation, report = self.evaluation, self.report
        if evaluation is None or report is None:
            self._report("Evaluate: nothing to export yet", True)
            return []
        try:
            written = await asyncio.get_running_loop().run_in_executor(
                self._executor, export_report, folder, evaluation, report, self.threshold
            )
        except OSError as e:
            self._report(f"Export of the evaluation: {e}", True)
            return []
        self._report(f"Evaluation report: {len(written)} files written to {folder}", False)
        return written

    async def shutdown(self) -> None:
        self._settle_later.cancel()
        await self.stop()
