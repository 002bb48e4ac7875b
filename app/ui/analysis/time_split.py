"""TimeSplitWidget: a stacked bar of where a request's time goes, with the figures beside it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from app.inference.introspection.server_stats import ServerSplit
from app.pipeline.time_split import Segment, stage_rows
from app.ui.analysis.stacked_bar import StackedBar
from app.ui.analysis.stage_split import StageSplitWidget
from app.ui.analysis.stats_panel import format_ms

COLORS = {
    "preprocess": QColor(120, 170, 230),
    "wait": QColor(190, 190, 190),
    "round_trip": QColor(150, 110, 200),
    "network": QColor(150, 110, 200),
    "queue": QColor(240, 170, 60),
    "compute": QColor(220, 90, 60),
    "postprocess": QColor(90, 180, 120),
}
NO_DATA = "No successful request yet: the split appears once requests come back."
BATCHER_TIP = (
    "What the server's batcher did over the last interval with requests (Triton's statistics): "
    "images per model execution (1.0: every image ran alone; 4.0: the model ran once for every "
    "4 images, through dynamic batching, client batches or both) and model executions per "
    "second. A model whose cost hardly depends on the batch (a GPU) gets faster as the batch "
    "grows: Tools > Tune… tries dynamic batching on your images."
)


def batcher_text(split: ServerSplit) -> str:
    """e.g. "server batch 3.2 images per execution · 48 executions/s"."""
    rate = "" if split.executions_per_s is None else f" · {split.executions_per_s:.3g} executions/s"
    return f"server batch {split.batch_size:.2f} images per execution{rate}"


class TimeSplitWidget(QWidget):
    """`set_segments(segments)`: the bar and one row per segment (colour, name, mean ms, %)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = StackedBar()
        self.note = QLabel(NO_DATA)
        self.note.setWordWrap(True)
        self.batcher = QLabel()
        self.batcher.setWordWrap(True)
        self.batcher.setToolTip(BATCHER_TIP)
        self.batcher.hide()
        self.stages = StageSplitWidget()  # a pipeline's stages; hidden for a single model
        self._grid = QGridLayout()
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setVerticalSpacing(0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.bar)
        layout.addLayout(self._grid)
        layout.addWidget(self.batcher)
        layout.addWidget(self.stages)
        layout.addWidget(self.note)
        layout.addStretch(1)  # spare height below the figures, not between them
        self._rows: list[tuple[QLabel, QLabel, QLabel]] = []
        self.segments: list[Segment] = []

    def set_segments(self, segments: list[Segment], note: str = "") -> None:
        self.segments = list(segments)
        self.bar.set_parts([(s.ms, COLORS.get(s.key, QColor("gray"))) for s in self.segments])
        while len(self._rows) < len(segments):
            row = len(self._rows)
            labels = (QLabel(), QLabel(), QLabel())
            labels[1].setAlignment(Qt.AlignmentFlag.AlignRight)
            labels[2].setAlignment(Qt.AlignmentFlag.AlignRight)
            for col, label in enumerate(labels):
                self._grid.addWidget(label, row, col)
            self._rows.append(labels)
        total = sum(s.ms for s in segments)
        for i, (name, ms, share) in enumerate(self._rows):
            visible = i < len(segments)
            for label in (name, ms, share):
                label.setVisible(visible)
            if not visible:
                continue
            s = segments[i]
            color = COLORS.get(s.key, QColor("gray")).name()
            name.setText(f"<span style='color:{color}'>■</span> {s.title}")
            name.setToolTip(s.explanation)
            ms.setText(format_ms(s.ms))
            share.setText(f"{100 * s.ms / total:.0f}%" if total > 0 else "")
        self.note.setText(note or ("" if segments else NO_DATA))
        self.note.setVisible(bool(self.note.text()))

    def set_batcher(self, split: ServerSplit | None) -> None:
        """The server's average batch and executions per second beside the split (hidden
        until an interval with requests was read)."""
        self.batcher.setText("" if split is None else batcher_text(split))
        self.batcher.setVisible(split is not None)

    def set_stages(self, model: str, split: ServerSplit | None) -> None:
        """A pipeline's stages over the same interval as the batcher's figures (hidden for a
        single model, or until an interval with requests was read)."""
        self.stages.set_rows(model, stage_rows(model, split))

    def row_texts(self) -> list[str]:
        """What the rows say, e.g. "server queue 2.1 ms"."""
        return [f"{s.title} {format_ms(s.ms)}" for s in self.segments]
