"""StageSplitWidget: a pipeline's stages under "Where the time goes": a bar of the pipeline's
server time (its queue, each stage, the rest of its compute) and one row per part with its
queue, compute and calls per request of the pipeline."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from app.pipeline.time_split import StageRow
from app.ui.analysis.stacked_bar import StackedBar
from app.ui.analysis.stats_panel import format_ms

# Shades apart from the main bar's: the stages are inside its "server compute".
STAGE_COLORS = (QColor(190, 60, 120), QColor(235, 130, 80), QColor(150, 80, 190), QColor(120, 70, 40))
OUTSIDE_COLOR = QColor(220, 90, 60)  # the main bar's compute colour: the rest of it
QUEUE_COLOR = QColor(240, 170, 60)  # the main bar's queue colour: the pipeline's own queue
SHARED_NOTE = (
    "Stage figures count every request those models served in the interval: other clients' "
    "and other pipelines' too."
)
HEADERS = ("", "queue", "compute", "calls")
TIP = (
    "Triton's statistics of each composing model over the last interval with requests, "
    "divided by the pipeline's requests: what each stage adds to one request of the pipeline. "
    "calls: the stage's requests per request of the pipeline (a BLS model may call a stage "
    "once per face, or send several crops in one call). A BLS model's compute includes its "
    "stages (it waits for them); an ensemble's compute is its steps' compute, their queues "
    "left out. Outside the stages: the rest of the pipeline's time on the server. A request "
    "in flight at a read counts for its stages in one interval and for the pipeline in the "
    "next: over a short burst the figures of one interval can be off by that request."
)


def stage_color(index: int) -> QColor:
    return STAGE_COLORS[index % len(STAGE_COLORS)]


class StageSplitWidget(QWidget):
    """`set_rows(model, rows)`: hidden while `rows` is empty."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip(TIP)
        self.title = QLabel()
        self.bar = StackedBar(height=10)
        self.note = QLabel(SHARED_NOTE)
        self.note.setWordWrap(True)
        self.note.setEnabled(False)  # greyed: a caveat, not a figure
        self._grid = QGridLayout()
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setVerticalSpacing(0)
        for col, text in enumerate(HEADERS):
            header = QLabel(text)
            header.setEnabled(False)
            header.setAlignment(Qt.AlignmentFlag.AlignRight)
            self._grid.addWidget(header, 0, col)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.bar)
        layout.addLayout(self._grid)
        layout.addWidget(self.note)
        self._labels: list[tuple[QLabel, QLabel, QLabel, QLabel]] = []
        self.rows: list[StageRow] = []
        self.hide()

    def set_rows(self, model: str, rows: list[StageRow]) -> None:
        self.rows = list(rows)
        self.setVisible(bool(rows))
        if not rows:
            return
        self.title.setText(f"<b>Stages of {model}</b>, per request of {model}")
        colors = self._colors(rows)
        total = next((r for r in rows if r.key == "total"), None)
        parts = [(total.queue_ms or 0.0, QUEUE_COLOR)] if total is not None else []
        parts += [
            ((r.queue_ms or 0.0) + r.compute_ms, color)
            for r, color in zip(rows, colors, strict=True)
            if color is not None  # the stages and the rest of the compute; the total is the whole
        ]
        self.bar.set_parts(parts)
        while len(self._labels) < len(rows):
            labels = (QLabel(), QLabel(), QLabel(), QLabel())
            for col, label in enumerate(labels):
                if col:
                    label.setAlignment(Qt.AlignmentFlag.AlignRight)
                self._grid.addWidget(label, len(self._labels) + 1, col)
            self._labels.append(labels)
        for i, labels in enumerate(self._labels):
            for label in labels:
                label.setVisible(i < len(rows))
            if i < len(rows):
                self._fill(labels, rows[i], colors[i])

    @staticmethod
    def _colors(rows: list[StageRow]) -> list[QColor | None]:
        out: list[QColor | None] = []
        stage = 0
        for r in rows:
            if r.key == "stage":
                out.append(stage_color(stage))
                stage += 1
            else:
                out.append(OUTSIDE_COLOR if r.key == "outside" else None)
        return out

    @staticmethod
    def _fill(labels: tuple[QLabel, QLabel, QLabel, QLabel], row: StageRow, color: QColor | None) -> None:
        name, queue, compute, calls = labels
        square = f"<span style='color:{color.name()}'>■</span> " if color is not None else ""
        title = f"<b>{row.title}</b>" if row.key == "total" else row.title
        name.setText(square + title)
        name.setToolTip(row.explanation)
        queue.setText("" if row.queue_ms is None else format_ms(row.queue_ms))
        compute.setText(format_ms(row.compute_ms))
        calls.setText("" if row.calls is None else f"{row.calls:.2f}")

    def row_texts(self) -> list[str]:
        """What the rows say, e.g. "face_detector queue 0.1 ms compute 8.1 ms calls 1.00"."""
        out = []
        for r in self.rows:
            text = r.title
            if r.queue_ms is not None:
                text += f" queue {format_ms(r.queue_ms)}"
            text += f" compute {format_ms(r.compute_ms)}"
            if r.calls is not None:
                text += f" calls {r.calls:.2f}"
            out.append(text)
        return out
