"""BatchPanel: progress of a batch of images (count / total, rate), Cancel, and a summary."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget


def format_rate(count: int, seconds: float) -> str:
    rate = count / seconds if seconds > 0 else 0.0
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}"


def summary_text(total: int, ok: int, failed: int, seconds: float, cancelled: int = 0) -> str:
    """e.g. "312 images · 310 ok · 2 failed · 4.1 s · 76 img/s" (" · N cancelled" when some were)."""
    noun = "image" if total == 1 else "images"
    cancel = f" · {cancelled} cancelled" if cancelled else ""
    rate = format_rate(total - cancelled, seconds)
    return f"{total} {noun} · {ok} ok · {failed} failed{cancel} · {seconds:.1f} s · {rate} img/s"


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
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.summary)
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

    def set_total(self, total: int) -> None:
        """The total grew (e.g. a folder still being listed); progress keeps its count."""
        done = self.progress.value()
        self._total = max(int(total), 0)
        self.progress.setRange(0, max(self._total, 1))
        self.set_progress(done)

    def set_progress(self, done: int) -> None:
        done = min(max(int(done), 0), max(self._total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(self._progress_text(done))

    def finish(self, total: int, ok: int, failed: int, seconds: float, cancelled: int = 0) -> None:
        done = total - cancelled
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done if total else 1)
        self.progress.setFormat(f"{done} / {total}" + (" · cancelled" if cancelled else ""))
        self.cancel_button.setEnabled(False)
        self.summary.setText(summary_text(total, ok, failed, seconds, cancelled))

    def progress_text(self) -> str:
        return self.progress.text()

    def _progress_text(self, done: int) -> str:
        elapsed = self._clock() - self._started
        return f"{done} / {self._total} · {format_rate(done, elapsed)} img/s"

    def _on_cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.cancel_requested.emit()
