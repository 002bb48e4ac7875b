"""The tune's table: one row per trial and level (a trial the server refused: one row with its
reason), the Pareto front and the recommendation marked, the server's CPU while measuring."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from app.pipeline.tune_analysis import Point, Recommendation, TrialResult
from app.ui.server_tools.tune_plot import RECOMMENDED_COLOR, trial_color

COLUMNS = (
    "trial",
    "instances",
    "max batch",
    "queue delay",
    "in flight",
    "req/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "srv queue ms",
    "srv compute ms",
    "avg batch",
    "server CPU",
    "failed",
    "",
)
MARK = len(COLUMNS) - 1


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


class TuneTable(QTableWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)  # more rows show
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.setMinimumHeight(120)

    def set_trials(
        self,
        trials: Sequence[TrialResult],
        front: Sequence[Point] = (),
        recommendation: Recommendation | None = None,
    ) -> None:
        on_front = {id(p.level) for p in front}
        chosen = id(recommendation.level) if recommendation is not None else None
        rows: list[tuple[int, list[str], str]] = []  # (trial index, cells, mark)
        for index, trial in enumerate(trials):
            s = trial.settings
            head = [
                f"{index + 1}{'*' if trial.original else ''}",
                str(s.instances),
                str(s.max_batch_size),
                "off" if s.max_queue_delay_us is None else f"{s.max_queue_delay_us} us",
            ]
            cpu = (trial.server_metrics or {}).get("cpu_utilization_mean")
            cpu_text = "-" if cpu is None else f"{cpu:.0%}"
            if trial.error is not None or not trial.levels:
                why = trial.error or "interrupted before a level was measured"
                rows.append((index, head + [""] * (MARK - len(head)), why))
                continue
            for lv in trial.levels:
                cells = [
                    *head,
                    str(lv.concurrency),
                    f"{lv.throughput:.1f}",
                    _ms(lv.p50_ms),
                    _ms(lv.p95_ms),
                    _ms(lv.p99_ms),
                    _ms(lv.server_queue_ms),
                    _ms(lv.server_compute_ms),
                    _ms(lv.server_avg_batch),
                    cpu_text,
                    str(lv.failed),
                ]
                mark = "recommended" if id(lv) == chosen else ("Pareto front" if id(lv) in on_front else "")
                if lv.failed and lv.first_error:
                    mark = f"{mark}; {lv.first_error}".lstrip("; ")
                rows.append((index, cells, mark))
        self.setRowCount(len(rows))
        bold = QFont(self.font())
        bold.setBold(True)
        for row, (index, cells, mark) in enumerate(rows):
            for col, text in enumerate([*cells, mark]):
                item = QTableWidgetItem(text)
                if col == 0:
                    item.setForeground(QBrush(trial_color(index)))
                    item.setFont(bold)
                if col == MARK and mark:
                    item.setToolTip(mark)
                    if mark.startswith("recommended"):
                        item.setForeground(QBrush(RECOMMENDED_COLOR))
                        item.setFont(bold)
                self.setItem(row, col, item)
        chosen_row = next(
            (r for r, (_i, _c, mark) in enumerate(rows) if mark.startswith("recommended")), None
        )
        first_cell = self.item(chosen_row, 0) if chosen_row is not None else None
        if first_cell is not None:
            self.scrollToItem(first_cell)  # the recommendation in view

    def row_texts(self) -> list[list[str]]:
        """Every cell, row by row (what a test or a copy sees)."""
        return [[self._text(r, c) for c in range(self.columnCount())] for r in range(self.rowCount())]

    def _text(self, row: int, col: int) -> str:
        item = self.item(row, col)
        return "" if item is None else item.text()
