"""The Events panel: the line crossings and zone entries and exits of every live stream as they
happen (time, stream, track, class, line or zone, what happened), filtered by stream and by
kind, exported as JSON Lines or CSV with the same record fields as `infer --zones` writes
(app.analytics.export; the file is written on the executor). The newest event is at the
bottom; the list keeps the last MAX_EVENTS."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.analytics.events import AnalyticsEvent, EventKind
from app.analytics.export import save_events
from app.ui.base.tasks import TaskSet

MAX_EVENTS = 50_000
COLUMNS = ("Time", "Stream", "Line / zone", "Event", "Track", "Class")
STREAM_COLUMN = 1
ALL = ""  # the filters' "every stream" / "every kind"
KINDS = (
    (ALL, "Every kind"),
    (EventKind.LINE_CROSSED.value, "Line crossings"),
    (EventKind.ZONE_ENTERED.value, "Zone entries"),
    (EventKind.ZONE_LEFT.value, "Zone exits"),
)
Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class EventRow:
    stream: str  # the stream's name in the wall (its tile's title)
    event: AnalyticsEvent
    at: float  # wall-clock time it happened (epoch s)

    def texts(self) -> tuple[str, ...]:
        e = self.event
        if e.kind is EventKind.LINE_CROSSED:
            what = f"crossed {e.direction}"
        elif e.kind is EventKind.ZONE_ENTERED:
            what = "entered"
        else:
            dwell = f" {e.dwell_s:.1f} s" if e.dwell_s is not None else ""
            what = f"left{dwell}" if e.reason == "left" else f"{e.reason}{dwell}"
        clock = time.strftime("%H:%M:%S", time.localtime(self.at))
        return (clock, self.stream, e.name, what, str(e.track_id), e.label)


class EventsModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[EventRow] = []  # every event kept
        self.shown: list[EventRow] = []  # those the filters let through
        self.stream = ALL
        self.kind = ALL

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.shown)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation is Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = 0) -> Any:
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole) and index.isValid():
            return self.shown[index.row()].texts()[index.column()]
        return None

    def passes(self, row: EventRow) -> bool:
        return (self.stream == ALL or row.stream == self.stream) and (
            self.kind == ALL or row.event.kind.value == self.kind
        )

    def add(self, rows: Sequence[EventRow]) -> None:
        self.rows.extend(rows)
        if len(self.rows) > MAX_EVENTS:
            del self.rows[: len(self.rows) - MAX_EVENTS]
            self.refilter()
            return
        new = [r for r in rows if self.passes(r)]
        if new:
            first = len(self.shown)
            self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
            self.shown.extend(new)
            self.endInsertRows()

    def refilter(self) -> None:
        self.beginResetModel()
        self.shown = [r for r in self.rows if self.passes(r)]
        self.endResetModel()

    def clear(self) -> None:
        self.beginResetModel()
        self.rows, self.shown = [], []
        self.endResetModel()


class EventsPanel(QWidget):
    def __init__(
        self,
        executor: Executor,
        tasks: TaskSet,
        report: Callable[[str, bool], None],
        start_dir: Callable[[], str],
        remember_dir: Callable[[str], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._executor, self._tasks, self._report = executor, tasks, report
        self._start_dir, self._remember_dir = start_dir, remember_dir
        self.model = EventsModel()
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # The stream's name takes what is left (elided in the middle: its end tells streams apart).
        header.setSectionResizeMode(STREAM_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setWordWrap(False)
        self.streams = QComboBox()
        self.streams.addItem("Every stream", ALL)
        self.streams.setToolTip("Only this stream's events")
        self.kinds = QComboBox()
        for value, text in KINDS:
            self.kinds.addItem(text, value)
        self.kinds.setToolTip("Only this kind of event")
        self.count = QLabel("No event yet: draw a line or a zone on a live picture (right-click it)")
        self.count.setWordWrap(True)
        self.export_jsonl = QPushButton("JSON Lines…")
        self.export_csv = QPushButton("CSV…")
        for button in (self.export_jsonl, self.export_csv):
            button.setToolTip("Export the events listed (as filtered), with infer --zones' record fields")
        self.clear_button = QPushButton("Clear")
        filters = QHBoxLayout()
        filters.addWidget(self.streams, 1)
        filters.addWidget(self.kinds, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Export:"))
        buttons.addWidget(self.export_jsonl)
        buttons.addWidget(self.export_csv)
        buttons.addStretch(1)
        buttons.addWidget(self.clear_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(filters)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.count)
        layout.addLayout(buttons)
        self.streams.currentIndexChanged.connect(self._filter)
        self.kinds.currentIndexChanged.connect(self._filter)
        self.export_jsonl.clicked.connect(lambda: self.ask_export(".jsonl"))
        self.export_csv.clicked.connect(lambda: self.ask_export(".csv"))
        self.clear_button.clicked.connect(self.clear)

    def add(self, stream: str, events: Sequence[AnalyticsEvent], epoch0: float) -> None:
        """Events of `stream` whose stream started at `epoch0` (their time_s counts from it)."""
        if self.streams.findData(stream) < 0:
            self.streams.addItem(stream, stream)
        at_bottom = self.table.verticalScrollBar().value() >= self.table.verticalScrollBar().maximum()
        self.model.add([EventRow(stream, e, epoch0 + e.time_s) for e in events])
        if at_bottom:
            self.table.scrollToBottom()
        self._count()

    def shown_events(self) -> list[AnalyticsEvent]:
        return [row.event for row in self.model.shown]

    def _filter(self, *_args: object) -> None:
        self.model.stream = str(self.streams.currentData() or ALL)
        self.model.kind = str(self.kinds.currentData() or ALL)
        self.model.refilter()
        self._count()

    def _count(self) -> None:
        total, shown = len(self.model.rows), len(self.model.shown)
        self.count.setText(f"{shown} of {total} events" if shown != total else f"{total} events")

    def clear(self) -> None:
        self.model.clear()
        self._count()

    def ask_export(self, suffix: str) -> None:
        kind = "JSON Lines" if suffix == ".jsonl" else "CSV"
        folder = self._start_dir() or str(Path.home())
        default = str(Path(folder) / time.strftime(f"events-%Y%m%d-%H%M%S{suffix}"))
        path, _ = QFileDialog.getSaveFileName(
            self,
            f"Export the events ({kind})",
            default,
            f"{kind} (*{suffix})",
            options=QFileDialog.Option.DontUseNativeDialog,
        )
        if path:
            if not path.lower().endswith(suffix):
                path += suffix
            self._tasks.spawn(self.export(path), name="export the events")

    async def export(self, path: str) -> None:
        """The events listed (as filtered) to `path`: CSV for a .csv path, else JSON Lines."""
        events = self.shown_events()
        self._remember_dir(str(Path(path).parent))
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, save_events, events, path)
        except OSError as e:
            self._report(f"events not exported: {e}", True)
            return
        self._report(f"{len(events)} events exported to {path}", False)
