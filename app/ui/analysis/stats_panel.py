"""StatsPanel: the figures of one scope (this batch, the live stream, everything) as a small
table, a scope selector and a Reset button; what each figure is over is written under it."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.analysis.scoped_stats import LATENCY_WINDOW, RATE_WINDOW_S, SCOPE_TITLES, Scope, ScopeSnapshot

NONE_TEXT = "\u2013"  # en dash: a value not known yet (a percentile before any OK request)

# (key, row title, tooltip) in display order; keys are what `value_text` takes.
STAT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("in_flight", "In flight", "Requests sent and not answered yet, all scopes together"),
    ("inputs", "Inputs done", "Inputs that ended: every image, video frame or file ends exactly once"),
    ("sent", "Requests sent", "Inputs that became a request to the server"),
    ("ok", "OK", "Answered with detections (possibly none)"),
    ("failed", "Failed", "Unreadable files and requests the server or the network failed"),
    ("timed_out", "Timed out", "No answer within the timeout"),
    ("cancelled", "Cancelled", "Stopped before the answer (Cancel, Stop, switching server or model)"),
    ("not_started", "Not started", "Batch inputs never sent because the batch was cancelled first"),
    ("skipped", "Skipped", "Entries of a folder that are neither images nor videos"),
    ("p50", "Latency p50", ""),
    ("p95", "Latency p95", ""),
    ("p99", "Latency p99", ""),
    (
        "requests_per_s",
        "Requests/s",
        "Requests answered per second; in a live stream each request is one inferred frame",
    ),
)
COUNT_KEYS = ("inputs", "sent", "ok", "failed", "timed_out", "cancelled", "not_started", "skipped")
PROBLEM_COLOR = "#c62828"


def format_ms(value: float | None) -> str:
    if value is None:
        return NONE_TEXT
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def format_rate(value: float) -> str:
    return f"{value:.1f}"


def window_text(latency_samples: int) -> str:
    """What the percentiles and the rate are computed over."""
    if latency_samples >= LATENCY_WINDOW:
        latency = f"last {LATENCY_WINDOW} OK requests"
    elif latency_samples == 0:
        latency = f"none yet (then the last {LATENCY_WINDOW} OK)"
    else:
        latency = f"the {latency_samples} OK so far (then the last {LATENCY_WINDOW})"
    return f"Latency: {latency} · Requests/s: last {RATE_WINDOW_S:.0f} s"


def one_line(snap: ScopeSnapshot) -> str:
    """The status bar's summary, e.g. "This batch: 310 ok · 2 failed · p50 21.3 ms · 184.1 req/s"."""
    failed = snap.failed + snap.timed_out
    return (
        f"{SCOPE_TITLES[snap.scope]}: {snap.ok} ok · {failed} failed · "
        f"p50 {format_ms(snap.p50_ms)} · {format_rate(snap.requests_per_s)} req/s"
    )


def scope_note(snap: ScopeSnapshot) -> str:
    """e.g. "This batch · started 14:03:12" or "Everything · reset 14:05:40"."""
    clock = time.strftime("%H:%M:%S", time.localtime(snap.since))
    return f"{SCOPE_TITLES[snap.scope]} · {snap.note} {clock}"


class StatsPanel(QWidget):
    """Feed with `show_snapshot(snapshot, in_flight)` a few times a second; emits
    `scope_changed(scope)` and `reset_requested(scope)`."""

    scope_changed = Signal(object)  # Scope
    reset_requested = Signal(object)  # Scope

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.scope_combo = QComboBox()
        for scope in (Scope.BATCH, Scope.LIVE, Scope.SESSION):
            self.scope_combo.addItem(SCOPE_TITLES[scope], scope.value)
        self.scope_combo.setToolTip("Which results the figures are over")
        self.scope_combo.setCurrentIndex(2)
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Start this scope's counters, percentiles and chart again from now")
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.window_note = QLabel(window_text(LATENCY_WINDOW))
        self.window_note.setWordWrap(True)
        self.window_note.setStyleSheet("color: palette(mid);")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.scope_combo, 1)
        top.addWidget(self.reset_button)
        self._grid = QGridLayout()
        self._grid.setContentsMargins(4, 2, 4, 2)
        self._grid.setHorizontalSpacing(8)
        self._grid.setVerticalSpacing(1)
        self._values: dict[str, QLabel] = {}
        self._names: dict[str, QLabel] = {}
        self._extras: dict[str, tuple[QLabel, QLabel]] = {}
        self._mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self._rows = [0, 0]  # rows used in each half: counts left, timing right
        for key, title, tip in STAT_ROWS:
            name, _value = self._add_row(key, title, 0 if key in COUNT_KEYS or key == "in_flight" else 1)
            name.setToolTip(tip)
        self._grid.setColumnStretch(1, 1)
        self._grid.setColumnStretch(3, 1)
        self._grid.setColumnMinimumWidth(2, 70)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.note)
        layout.addLayout(self._grid)
        layout.addWidget(self.window_note)
        self.scope_combo.currentIndexChanged.connect(lambda _i: self.scope_changed.emit(self.scope()))
        self.reset_button.clicked.connect(lambda: self.reset_requested.emit(self.scope()))
        self.clear()

    def _add_row(self, key: str, title: str, half: int = 1) -> tuple[QLabel, QLabel]:
        row = self._rows[half]
        self._rows[half] += 1
        name = QLabel(title)
        value = QLabel(NONE_TEXT)
        value.setFont(self._mono)
        value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._grid.addWidget(name, row, 2 * half)
        self._grid.addWidget(value, row, 2 * half + 1)
        self._values[key] = value
        self._names[key] = name
        return name, value

    # -- scope ------------------------------------------------------------------------
    def scope(self) -> Scope:
        return Scope(self.scope_combo.currentData())

    def set_scope(self, scope: Scope) -> None:
        self.scope_combo.setCurrentIndex(self.scope_combo.findData(scope.value))

    # -- values -----------------------------------------------------------------------
    def show_snapshot(self, snap: ScopeSnapshot, in_flight: int) -> None:
        texts = {
            "in_flight": str(in_flight),
            "inputs": str(snap.inputs),
            "sent": str(snap.sent),
            "ok": str(snap.ok),
            "failed": str(snap.failed),
            "timed_out": str(snap.timed_out),
            "cancelled": str(snap.cancelled),
            "not_started": str(snap.not_started),
            "skipped": str(snap.skipped),
            "p50": format_ms(snap.p50_ms),
            "p95": format_ms(snap.p95_ms),
            "p99": format_ms(snap.p99_ms),
            "requests_per_s": format_rate(snap.requests_per_s),
        }
        for key, text in texts.items():
            self._values[key].setText(text)
        for key in ("failed", "timed_out"):
            self._values[key].setStyleSheet(f"color: {PROBLEM_COLOR};" if texts[key] != "0" else "")
        self._set_row_visible("not_started", snap.scope is Scope.BATCH)
        self.note.setText(scope_note(snap))
        self.window_note.setText(window_text(snap.latency_samples))

    def _set_row_visible(self, key: str, visible: bool) -> None:
        self._names[key].setVisible(visible)
        self._values[key].setVisible(visible)

    def clear(self) -> None:
        """Back to the "nothing yet" state (extra rows stay, their values reset)."""
        for key, label in self._values.items():
            label.setText("0" if key in COUNT_KEYS or key == "in_flight" else NONE_TEXT)
            label.setStyleSheet("")

    def set_extra(self, name: str, value_text: str, tooltip: str = "") -> None:
        """Show (or update) an extra row, e.g. ("Capture frames/s", "29.8")."""
        key = f"extra:{name}"
        if key not in self._values:
            self._extras[name] = self._add_row(key, name)
            self._extras[name][0].setToolTip(tooltip)
        self._values[key].setText(value_text)

    def remove_extra(self, name: str) -> None:
        pair = self._extras.pop(name, None)
        if pair is None:
            return
        self._rows[1] -= 1  # extras are the last rows of the right half, removed together
        del self._values[f"extra:{name}"]
        del self._names[f"extra:{name}"]
        for label in pair:
            self._grid.removeWidget(label)
            label.deleteLater()

    def extra_names(self) -> list[str]:
        return list(self._extras)

    def value_text(self, key: str) -> str:
        """The text shown for a row: a STAT_ROWS key or an extra row's name."""
        label = self._values.get(key) or self._values[f"extra:{key}"]
        return label.text()

    def rows(self) -> list[tuple[str, str]]:
        """(title, value) of every visible row, in order (for the CSV export)."""
        out = []
        for key in self._values:
            name = self._names[key]
            if not name.isHidden():
                out.append((name.text(), self._values[key].text()))
        return out
