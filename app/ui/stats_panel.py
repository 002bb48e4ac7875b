"""StatsPanel: request counters, latency percentiles and throughput as a small table of labels."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from app.inference.stats import StatsSnapshot

NONE_TEXT = "\u2013"  # en dash, shown for a value not known yet (e.g. a percentile before any OK request)

# (key, row title) in display order; keys are what `value_text` takes.
STAT_ROWS: tuple[tuple[str, str], ...] = (
    ("in_flight", "In flight"),
    ("sent", "Sent"),
    ("ok", "OK"),
    ("failed", "Failed"),
    ("timed_out", "Timed out"),
    ("cancelled", "Cancelled"),
    ("p50", "Latency p50"),
    ("p95", "Latency p95"),
    ("p99", "Latency p99"),
    ("throughput", "Requests/s"),
)


def format_ms(value: float | None) -> str:
    if value is None:
        return NONE_TEXT
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def format_rate(value: float) -> str:
    return f"{value:.1f}"


class StatsPanel(QWidget):
    """Feed it with `update_stats(snapshot)` (a few times a second) and `set_extra(...)`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(4, 4, 4, 4)
        self._grid.setHorizontalSpacing(12)
        self._grid.setVerticalSpacing(2)
        self._values: dict[str, QLabel] = {}
        self._extras: dict[str, tuple[QLabel, QLabel]] = {}
        self._mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for key, title in STAT_ROWS:
            self._add_row(key, title)
        self._grid.setColumnStretch(1, 1)
        self.clear()

    def _add_row(self, key: str, title: str) -> tuple[QLabel, QLabel]:
        row = self._grid.rowCount()
        name = QLabel(title)
        value = QLabel(NONE_TEXT)
        value.setFont(self._mono)
        value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._grid.addWidget(name, row, 0)
        self._grid.addWidget(value, row, 1)
        self._values[key] = value
        return name, value

    def update_stats(self, snapshot: StatsSnapshot) -> None:
        texts = {
            "in_flight": str(snapshot.in_flight),
            "sent": str(snapshot.sent),
            "ok": str(snapshot.ok),
            "failed": str(snapshot.failed),
            "timed_out": str(snapshot.timed_out),
            "cancelled": str(snapshot.cancelled),
            "p50": format_ms(snapshot.p50_ms),
            "p95": format_ms(snapshot.p95_ms),
            "p99": format_ms(snapshot.p99_ms),
            "throughput": format_rate(snapshot.throughput),
        }
        for key, text in texts.items():
            self._values[key].setText(text)
        problems = snapshot.failed + snapshot.timed_out
        self._values["failed"].setStyleSheet("color: #c62828;" if snapshot.failed else "")
        self._values["timed_out"].setStyleSheet("color: #c62828;" if snapshot.timed_out else "")
        self.setToolTip(f"{problems} failed or timed out, {snapshot.retried} retried")

    def clear(self) -> None:
        """Back to the "nothing yet" state (extra rows stay, their values reset)."""
        for key, label in self._values.items():
            if key in {"in_flight", "sent", "ok", "failed", "timed_out", "cancelled"}:
                label.setText("0")
            else:
                label.setText(NONE_TEXT)
            label.setStyleSheet("")

    def set_extra(self, name: str, value_text: str) -> None:
        """Show (or update) an extra row, e.g. ("capture fps", "29.8")."""
        key = f"extra:{name}"
        if key not in self._values:
            self._extras[name] = self._add_row(key, name[:1].upper() + name[1:])
        self._values[key].setText(value_text)

    def remove_extra(self, name: str) -> None:
        pair = self._extras.pop(name, None)
        if pair is None:
            return
        del self._values[f"extra:{name}"]
        for label in pair:
            self._grid.removeWidget(label)
            label.deleteLater()

    def extra_names(self) -> list[str]:
        return list(self._extras)

    def value_text(self, key: str) -> str:
        """The text shown for a row: a STAT_ROWS key or an extra row's name."""
        label = self._values.get(key) or self._values[f"extra:{key}"]
        return label.text()
