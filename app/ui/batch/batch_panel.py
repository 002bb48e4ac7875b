"""BatchPanel: progress of a batch of images (count / total, rate), Cancel, and a summary."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from app.pipeline.batch import BatchCounts
from app.ui.widgets.elided_label import ElidedLabel


def format_rate(count: int, seconds: float) -> str:
    rate = count / seconds if seconds > 0 else 0.0
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}"


def summary_text(counts: BatchCounts, seconds: float) -> str:
    """e.g. "312 inputs · 309 ok · 2 failed · 1 skipped · 4.1 s · 76 img/s"; cancelled and
    timed-out counts appear when there are some. The same figures as the Requests panel.
    Nothing at all (no input was found or listed) says so in words, never "0 inputs"."""
    if counts.total == 0:
        return "nothing was run: no image, video or folder entry was found in what was opened"
    noun = "input" if counts.total == 1 else "inputs"
    parts = [f"{counts.total} {noun}", f"{counts.ok} ok", f"{counts.failed} failed"]
    if counts.timeout:
        parts.append(f"{counts.timeout} timed out")
    if counts.skipped:
        parts.append(f"{counts.skipped} skipped")
    cancelled = counts.cancelled + counts.not_started
    if cancelled:
        parts.append(f"{cancelled} cancelled")
    # Images the server answered per second: a file that could not be read is no request.
    parts += [f"{seconds:.1f} s", f"{format_rate(counts.answered, seconds)} img/s"]
    return " · ".join(parts)


class BatchPanel(QWidget):
    """`start(total)`, then `set_progress(done)`; `finish(...)` shows the summary.
    The Cancel button emits `cancel_requested` (the owner does the cancelling)."""

    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self._clock = clock
        self._started = clock()
        self._total = 0
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.cancel_button = QPushButton("Cancel")
        # One line under the thumbnails (the picture keeps the height): the progress, Cancel,
        # and the summary once the batch is done (the whole of it in its tooltip).
        self.summary = ElidedLabel()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.progress, 2)
        row.addWidget(self.cancel_button)
        row.addWidget(self.summary, 3)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.start(0)

    def start(self, total: int) -> None:
        """A new batch of `total` images begins now."""
        self._total = max(int(total), 0)
        self._started = self._clock()
        self.progress.setRange(0, max(self._total, 1))
        self.progress.setValue(0)
        self.progress.setFormat(self._progress_text(0))
        self.cancel_button.setEnabled(self._total > 0)
        self.summary.clear()

    def wait(self, text: str) -> None:
        """Inputs are opened but cannot run yet (no server or no model): say what they wait
        for rather than "0 / 0"."""
        self._total = 0
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat(text)
        self.cancel_button.setEnabled(False)
        self.summary.clear()

    def set_progress(self, done: int) -> None:
        done = min(max(int(done), 0), max(self._total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(self._progress_text(done))

    def finish(self, counts: BatchCounts, seconds: float) -> None:
        total, cancelled = counts.total, counts.cancelled + counts.not_started
        done = total - cancelled
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done if total else 1)
        ended = f"{done} / {total}" if total else "nothing found"
        self.progress.setFormat(ended + (" · cancelled" if cancelled else ""))
        self.cancel_button.setEnabled(False)
        self.summary.setText(summary_text(counts, seconds))
        self.summary.setToolTip(self.summary.text())

    def progress_text(self) -> str:
        return self.progress.text()

    def _progress_text(self, done: int) -> str:
        elapsed = self._clock() - self._started
        return f"{done} / {self._total} · {format_rate(done, elapsed)} img/s"

    def _on_cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.cancel_requested.emit()
