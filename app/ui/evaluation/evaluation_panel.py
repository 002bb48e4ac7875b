"""The Evaluation panel's widgets: what runs (progress, Cancel), the COCO metrics, the dataset
and the speed of the run, the operating point (a score slider, or each class's best F1) with
precision, recall and F1 of all classes, and three tabs: the per-class table, the PR curves and
the confusion matrix as a heat map. No logic: the controller (evaluation_controller.py) fills it
and acts on what it emits. A dataset dropped on it asks for an evaluation of that dataset."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import signals_blocked

from app.evaluation.cocoeval import KEYPOINT_STATS
from app.evaluation.iou_type import IouType
from app.evaluation.report import METRIC_KEYS
from app.ui.analysis.stats_panel import NONE_TEXT, format_ms
from app.ui.evaluation.heat_map import ConfusionHeatMap
from app.ui.evaluation.pr_plot import PrCurves
from app.ui.widgets.path_drop import PathDrop

STEPS = 100  # the score slider's resolution: 0.01
METRIC_NAMES = {
    "map": ("mAP", "mAP@[.5:.95]: AP averaged over IoU 0.50 to 0.95 and over the classes"),
    "map50": ("mAP50", "mAP at IoU 0.5"),
    "map75": ("mAP75", "mAP at IoU 0.75"),
    "map_small": ("small", "mAP of small objects (area < 32²)"),
    "map_medium": ("medium", "mAP of medium objects (32² to 96²)"),
    "map_large": ("large", "mAP of large objects (area > 96²)"),
    "mar_1": ("AR@1", "recall with 1 detection per image"),
    "mar_10": ("AR@10", "recall with 10 detections per image"),
    "mar_100": ("AR@100", "recall with 100 detections per image"),
    "mar_20": ("AR@20", "recall with 20 detections per image (keypoints)"),
    "mar50_20": ("AR50", "recall at OKS 0.5, 20 detections per image"),
    "mar75_20": ("AR75", "recall at OKS 0.75, 20 detections per image"),
}
TABLE_COLUMNS = ("class", "AP", "AP50", "objects", "score ≥", "precision", "recall", "F1", "TP", "FP", "FN")


def figure(value: float | None, digits: int = 3) -> str:
    return NONE_TEXT if value is None else f"{value:.{digits}f}"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def problem_text(problem: dict[str, Any]) -> str:
    """A dataset problem of the report, as `Problem.text()` says it."""
    where = f" ({problem['where']})" if problem.get("where") else ""
    return f"{problem['file']}{where}: {problem['message']}"


def metric_keys(iou_type: str) -> tuple[str, ...]:
    """The metrics shown, in pycocotools' order (keypoints: no small objects, 20 detections).
    `iou_type` as the report spells it."""
    return KEYPOINT_STATS[:8] if iou_type == IouType.KEYPOINTS else METRIC_KEYS


class _Number(QTableWidgetItem):
    """A table cell that sorts by its number (UserRole), undefined ones first."""

    def __init__(self, text: str, value: float | None) -> None:
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole, value)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if mine is None or theirs is None:
            return mine is None and theirs is not None
        return float(mine) < float(theirs)


class EvaluationPanel(QWidget):
    threshold_changed = Signal(float)  # the score slider moved (by the user)
    best_requested = Signal()  # back to each class's best-F1 threshold
    cancel_requested = Signal()
    export_requested = Signal()
    evaluate_requested = Signal()
    sort_toggled = Signal(bool)  # thumbnails by errors (FP + FN), or as they came
    show_all_requested = Signal()
    dataset_dropped = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EvaluationPanel")
        self.drop = PathDrop(self)
        self.drop.dropped.connect(self.dataset_dropped.emit)
        self.title = QLabel(
            "Evaluate the model against a labelled dataset: Analyse > Evaluate against labels…"
        )
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.progress = QProgressBar()
        self.cancel_button = QPushButton("Cancel")
        self.evaluate_button = QPushButton("Evaluate…")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip(
            "report.json, per_class.csv, images.csv, PR curves and confusion matrix (PNG)"
        )
        self.export_button.setEnabled(False)
        run_row = QHBoxLayout()
        run_row.addWidget(self.status, 1)
        run_row.addWidget(self.progress, 1)
        run_row.addWidget(self.cancel_button)

        self.metric_labels: dict[str, QLabel] = {}
        self.metric_titles: dict[str, QLabel] = {}
        self.metrics_grid = QGridLayout()
        self.metrics_grid.setHorizontalSpacing(10)
        self.metrics_grid.setVerticalSpacing(2)
        self.dataset_line = QLabel()
        self.dataset_line.setWordWrap(True)
        self.speed_line = QLabel()
        self.speed_line.setWordWrap(True)
        self.problems = QListWidget()
        self.problems.setToolTip("What could not be read or used in the dataset, each with its file")
        run = QWidget()
        column = QVBoxLayout(run)
        column.setContentsMargins(2, 2, 2, 2)
        column.addWidget(self.dataset_line)
        column.addWidget(self.speed_line)
        column.addWidget(QLabel("Problems in the dataset:"))
        column.addWidget(self.problems, 1)

        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.slider.setPageStep(5)
        self.slider.setToolTip("The operating point: detections scoring at least this count (every class)")
        self.slider_value = QLabel("best F1")
        self.slider_value.setMinimumWidth(self.slider_value.fontMetrics().horizontalAdvance("best F1 "))
        self.best_button = QPushButton("Best F1")
        self.best_button.setToolTip("Each class at the score threshold that maximises its F1 (the report's)")
        point_row = QHBoxLayout()
        point_row.addWidget(QLabel("Score ≥"))
        point_row.addWidget(self.slider, 1)
        point_row.addWidget(self.slider_value)
        point_row.addWidget(self.best_button)
        self.point_line = QLabel()
        self.point_line.setWordWrap(True)

        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        # Sized to the contents once per update (ResizeToContents would measure at every cell set).
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.setSortingEnabled(True)
        self.pr_curves = PrCurves()
        self.heat_map = ConfusionHeatMap()
        self.cell_line = QLabel("Click a cell: only its images in the thumbnails")
        self.cell_line.setWordWrap(True)
        self.show_all_button = QPushButton("All images")
        self.show_all_button.setEnabled(False)
        confusion = QWidget()
        column = QVBoxLayout(confusion)
        column.setContentsMargins(2, 2, 2, 2)
        column.addWidget(self.heat_map, 1)
        cell_row = QHBoxLayout()
        cell_row.addWidget(self.cell_line, 1)
        cell_row.addWidget(self.show_all_button)
        column.addLayout(cell_row)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Classes")
        self.tabs.addTab(self.pr_curves, "PR curves")
        self.tabs.addTab(confusion, "Confusion matrix")
        self.tabs.addTab(run, "Dataset and speed")
        self.sort_check = QCheckBox("Most errors first")
        self.sort_check.setToolTip("The thumbnails with the most false positives + misses first")
        bottom_row = QHBoxLayout()
        bottom_row.addWidget(self.sort_check, 1)
        bottom_row.addWidget(self.evaluate_button)
        bottom_row.addWidget(self.export_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addLayout(run_row)
        layout.addLayout(self.metrics_grid)
        layout.addLayout(point_row)
        layout.addWidget(self.point_line)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(bottom_row)

        self.slider.valueChanged.connect(self._slider_moved)
        self.best_button.clicked.connect(self.best_requested.emit)
        self.cancel_button.clicked.connect(self.cancel_requested.emit)
        self.export_button.clicked.connect(self.export_requested.emit)
        self.evaluate_button.clicked.connect(self.evaluate_requested.emit)
        self.sort_check.toggled.connect(self.sort_toggled.emit)
        self.show_all_button.clicked.connect(self.show_all_requested.emit)
        self.set_idle()

    # -- states -----------------------------------------------------------------------------------------
    def set_idle(self) -> None:
        self.progress.hide()
        self.cancel_button.hide()
        self._set_result_widgets(False)

    def set_running(self, title: str, total: int) -> None:
        self.title.setText(title)
        self.status.setText("reading the dataset…" if total == 0 else f"0 / {total} images")
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(0)
        self.progress.show()
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)
        self.evaluate_button.setEnabled(False)
        self.export_button.setEnabled(False)
        self._set_result_widgets(False)
        self.table.setRowCount(0)
        self.heat_map.set_matrix([], self.heat_map.matrix[:0, :0])
        self.pr_curves.set_curves([])

    def set_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.status.setText(f"{done} / {total} images")

    def set_finished(self, status: str, has_result: bool) -> None:
        self.progress.hide()
        self.cancel_button.hide()
        self.evaluate_button.setEnabled(True)
        self.status.setText(status)
        self.export_button.setEnabled(has_result)
        self._set_result_widgets(has_result)

    def _set_result_widgets(self, on: bool) -> None:
        for widget in (self.slider, self.best_button, self.sort_check, self.tabs):
            widget.setEnabled(on)

    # -- the report --------------------------------------------------------------------------------------
    def show_report(self, report: dict[str, Any]) -> None:
        """The metrics, the dataset and the speed of the report (the command's JSON)."""
        while self.metrics_grid.count():
            item = self.metrics_grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.metric_labels.clear()
        self.metric_titles.clear()
        metrics = report["metrics"]
        for n, key in enumerate(metric_keys(report.get("iou_type", IouType.BBOX))):
            name, tip = METRIC_NAMES.get(key, (key, key))
            title, value = QLabel(name), QLabel(figure(metrics.get(key)))
            title.setToolTip(tip)
            value.setToolTip(tip)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            if key == "map":
                value.setStyleSheet("font-weight: bold")
            row, col = divmod(n, 3)
            self.metrics_grid.addWidget(title, row, 2 * col)
            self.metrics_grid.addWidget(value, row, 2 * col + 1)
            self.metric_labels[key], self.metric_titles[key] = value, title
        d = report["dataset"]
        dropped = d["dropped"]
        parts = [
            f"{d['format']}",
            f"{d['evaluated_images']} / {d['images']} images evaluated",
            count(d["annotations"], "object"),
        ]
        if dropped["annotations"] or dropped["images"]:
            parts.append(
                f"dropped: {count(dropped['annotations'], 'annotation')}, {count(dropped['images'], 'image')}"
            )
        if d["failed_images"]:
            parts.append(f"{count(len(d['failed_images']), 'image')} failed")
        if d["unmatched_classes"]:
            parts.append(f"not in the model: {', '.join(d['unmatched_classes'])}")
        self.dataset_line.setText(" · ".join(parts))
        self.problems.clear()
        listed = [problem_text(p) for p in dropped["problems"]]
        listed += [f"{f['source']}: {f['status']}: {f['error']}" for f in d["failed_images"]]
        if dropped["more_problems"]:
            listed.append(f"… and {dropped['more_problems']} more (in the exported report.json)")
        self.problems.addItems(listed or ["none"])
        self.dataset_line.setToolTip(d["path"])
        s = report.get("speed") or {}
        speed = [f"p50 {format_ms(s.get('latency_p50_ms'))}", f"p95 {format_ms(s.get('latency_p95_ms'))}"]
        if s.get("throughput") is not None:
            speed.append(f"{s['throughput']:.1f} images/s")
        if s.get("transport"):
            speed.append(str(s["transport"]))
        self.speed_line.setText("Speed of this run: " + " · ".join(speed))

    def set_slider(self, value: float | None, position: float | None = None) -> None:
        """Show the operating point without emitting (None: each class's best F1, the slider at
        `position`, e.g. the lowest of those thresholds)."""
        with signals_blocked(self.slider):
            at = value if value is not None else position
            if at is not None:
                self.slider.setValue(round(min(max(at, 0.0), 1.0) * STEPS))
        self.slider_value.setText("best F1" if value is None else f"{self.slider.value() / STEPS:.2f}")
        self.best_button.setEnabled(value is not None and self.slider.isEnabled())

    def _slider_moved(self, raw: int) -> None:
        self.slider_value.setText(f"{raw / STEPS:.2f}")
        self.best_button.setEnabled(True)
        self.threshold_changed.emit(raw / STEPS)

    def set_classes(self, rows: list[dict[str, Any]]) -> None:
        """Per class: "class", "ap", "ap50", "gt", "score_threshold", "precision", "recall",
        "f1", "tp", "fp", "fn" (None: undefined)."""
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        keys = ("ap", "ap50", "gt", "score_threshold", "precision", "recall", "f1", "tp", "fp", "fn")
        for r, row in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(str(row["class"])))
            for c, key in enumerate(keys, start=1):
                value = row.get(key)
                if key in ("gt", "tp", "fp", "fn"):
                    text = str(value)
                elif key == "score_threshold" and value is None:
                    text = "none kept"
                else:
                    text = figure(value, 2 if key == "score_threshold" else 3)
                self.table.setItem(r, c, _Number(text, value))
        self.table.setSortingEnabled(True)
        self.table.resizeColumnsToContents()

    def cell_text(self, class_name: str, column: str) -> str:
        """The text of a class's row in the per-class table (for the tests and the screenshot)."""
        c = TABLE_COLUMNS.index(column)
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and item.text() == class_name:
                cell = self.table.item(r, c)
                return cell.text() if cell is not None else ""
        raise KeyError(class_name)
