"""The tracks of the live stream: one row per track (id, class, first/last seen, length) and
the flicker figure (tracks seen on fewer than N frames), to judge how stable detections are."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.pipeline.tracking import FLICKER_FRAMES, FlickerStats, Track
from app.ui.base.colors import track_color

COLUMNS = ("id", "class", "first", "last", "frames", "state")
TRACKING_OFF = "Tracking is off: Track on the Live toolbar (or Live or Analyse > Track objects) turns it on"
MAX_ROWS = 500  # the newest tracks; older ones still count in the flicker figure


class _Number(QTableWidgetItem):
    """Sorts by value, not by text."""

    def __init__(self, value: int) -> None:
        super().__init__(str(value))
        self.setData(Qt.ItemDataRole.UserRole, value)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if isinstance(mine, int) and isinstance(theirs, int):
            return mine < theirs
        return self.text() < other.text()  # (not super(): PySide would call this again)


class TracksPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel(TRACKING_OFF)
        self.summary.setWordWrap(True)
        self.flicker_frames = QSpinBox()
        self.flicker_frames.setRange(2, 60)
        self.flicker_frames.setValue(FLICKER_FRAMES)
        self.flicker_frames.setToolTip("A track seen on fewer frames than this counts as flicker")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([c.capitalize() for c in COLUMNS])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSortingEnabled(True)
        row = QHBoxLayout()
        row.addWidget(QLabel("Flicker: fewer than"))
        row.addWidget(self.flicker_frames)
        row.addWidget(QLabel("frames"))
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addLayout(row)
        layout.addWidget(self.table, 1)

    def set_tracks(self, tracks: Sequence[Track], live_ids: set[int], flicker: FlickerStats) -> None:
        shown = sorted(tracks, key=lambda t: t.track_id)[-MAX_ROWS:]
        order = self.table.horizontalHeader().sortIndicatorSection()
        ascending = self.table.horizontalHeader().sortIndicatorOrder()
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(shown))
        for r, t in enumerate(shown):
            cells = [
                _Number(t.track_id),
                QTableWidgetItem(t.label),
                _Number(t.first_frame),
                _Number(t.last_frame),
                _Number(t.hits),
                QTableWidgetItem("followed" if t.track_id in live_ids else "ended"),
            ]
            cells[0].setForeground(track_color(t.track_id))
            for c, cell in enumerate(cells):
                self.table.setItem(r, c, cell)
        self.table.setSortingEnabled(True)
        self.table.sortItems(order, ascending)
        pct = 100.0 * flicker.short_fraction
        self.summary.setText(
            f"{len(tracks)} track(s), {len(live_ids)} followed now · flicker: {flicker.short_tracks} of "
            f"{flicker.tracks} ended track(s) ({pct:.0f}%) lived fewer than {flicker.frames} frames"
        )

    def clear(self, text: str = TRACKING_OFF) -> None:
        self.table.setRowCount(0)
        self.summary.setText(text)

    def row_values(self) -> list[list[str]]:
        """The table as text (for tests)."""
        return [
            [self.table.item(r, c).text() for c in range(self.table.columnCount())]  # type: ignore[union-attr]
            for r in range(self.table.rowCount())
        ]
