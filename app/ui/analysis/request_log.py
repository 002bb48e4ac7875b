"""Request log: a bounded table model of finished requests, with a text filter and "failures only"."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.inference.result import InferenceResult, Status

COLUMNS: tuple[str, ...] = ("Request id", "Source", "Frame", "Latency ms", "Status", "Error")
COL_ID, COL_SOURCE, COL_FRAME, COL_LATENCY, COL_STATUS, COL_ERROR = range(len(COLUMNS))
DEFAULT_MAX_ROWS = 10_000
FAILURE_STATUSES = frozenset({Status.FAILED, Status.TIMEOUT})
FAILED_BACKGROUND = QColor(255, 210, 210)
CANCELLED_BACKGROUND = QColor(230, 230, 230)
CANCELLED_FOREGROUND = QColor(120, 120, 120)
FAILED_FOREGROUND = QColor(120, 0, 0)
StatusRole = Qt.ItemDataRole.UserRole + 1  # the row's Status

_Index = QModelIndex | QPersistentModelIndex


class LogRow(NamedTuple):
    """The display fields of one result; the result itself (whose `tag` may hold a
    whole frame) is not kept, so 10,000 rows stay small."""

    texts: tuple[str, str, str, str, str, str]
    status: Status
    latency_ms: float | None


def row_of(result: InferenceResult) -> LogRow:
    latency = "" if result.latency_ms is None else f"{result.latency_ms:.1f}"
    texts = (
        result.request_id or "-",
        result.source or "",
        "" if result.frame is None else str(result.frame),
        latency,
        result.status.value,
        result.error or "",
    )
    return LogRow(texts, result.status, result.latency_ms)


class RequestLogModel(QAbstractTableModel):
    """Append-only, bounded to `max_rows` (the oldest rows are dropped first)."""

    def __init__(self, max_rows: int = DEFAULT_MAX_ROWS, parent: Any = None) -> None:
        super().__init__(parent)
        if max_rows < 1:
            raise ValueError("max_rows must be >= 1")
        self._max_rows = max_rows
        self._rows: list[LogRow] = []

    @property
    def max_rows(self) -> int:
        return self._max_rows

    # --- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = 0) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return row.texts[col]
        if role == Qt.ItemDataRole.ToolTipRole and col in (COL_SOURCE, COL_ERROR) and row.texts[col]:
            return row.texts[col]
        if role == Qt.ItemDataRole.BackgroundRole:
            if row.status in FAILURE_STATUSES:
                return FAILED_BACKGROUND
            if row.status is Status.CANCELLED:
                return CANCELLED_BACKGROUND
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.status in FAILURE_STATUSES:
                return FAILED_FOREGROUND
            if row.status is Status.CANCELLED:
                return CANCELLED_FOREGROUND
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_FRAME, COL_LATENCY):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == StatusRole:
            return row.status
        return None

    # --- appending -----------------------------------------------------------------

    def add_result(self, result: InferenceResult) -> None:
        self.add_results((result,))

    def add_results(self, results: Iterable[InferenceResult]) -> None:
        """Append a batch with one insert notification (cheap at hundreds of rows/s)."""
        new = [row_of(r) for r in results]
        if not new:
            return
        if len(new) > self._max_rows:
            new = new[-self._max_rows :]
        overflow = len(self._rows) + len(new) - self._max_rows
        if overflow > 0:
            self.beginRemoveRows(QModelIndex(), 0, overflow - 1)
            del self._rows[:overflow]
            self.endRemoveRows()
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
        self._rows.extend(new)
        self.endInsertRows()

    def clear(self) -> None:
        self.beginResetModel()
        self._rows.clear()
        self.endResetModel()

    def row(self, i: int) -> LogRow:
        return self._rows[i]


class RequestLogFilter(QSortFilterProxyModel):
    """Case-insensitive substring filter over every column, plus "failures only"."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._needle = ""
        self._failures_only = False

    def set_text(self, text: str) -> None:
        self._change_filter(needle=text.strip().casefold())

    def set_failures_only(self, on: bool) -> None:
        self._change_filter(failures_only=on)

    def _change_filter(self, needle: str | None = None, failures_only: bool | None = None) -> None:
        # Qt >= 6.10 wants begin/endFilterChange (invalidateFilter is deprecated there);
        # older PySide6 (the project allows >= 6.6) only has invalidateRowsFilter.
        modern = hasattr(self, "endFilterChange")
        if modern:
            self.beginFilterChange()
        if needle is not None:
            self._needle = needle
        if failures_only is not None:
            self._failures_only = failures_only
        if modern:
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.invalidateRowsFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: _Index) -> bool:
        model = self.sourceModel()
        if not isinstance(model, RequestLogModel):
            return True
        row = model.row(source_row)
        if self._failures_only and row.status not in FAILURE_STATUSES:
            return False
        if self._needle:
            return any(self._needle in text.casefold() for text in row.texts)
        return True


class MiddleElided(QStyledItemDelegate):
    """Long paths lose their middle, not their end: the file name stays visible."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: _Index) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle


class RequestLog(QWidget):
    """The log table with its filter line edit and "failures only" checkbox.
    Follows the newest row while the table is scrolled to the bottom. `selected(request_id)`
    when a row is chosen ("": none): the X-ray view shows that request."""

    selected = Signal(str)

    def __init__(self, max_rows: int = DEFAULT_MAX_ROWS, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = RequestLogModel(max_rows, self)
        self.proxy = RequestLogFilter(self)
        self.proxy.setSourceModel(self.model)

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter (id, source, status, error)…")
        self.filter_edit.setClearButtonEnabled(True)
        self.failures_only = QCheckBox("Failures only")
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self._source_delegate = MiddleElided(self.table)
        self.table.setItemDelegateForColumn(COL_SOURCE, self._source_delegate)
        header = self.table.horizontalHeader()
        # Fixed widths: ResizeToContents would measure every row on every insert.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, chars in (
            (COL_ID, 14),
            (COL_SOURCE, 28),
            (COL_FRAME, 7),
            (COL_LATENCY, 12),
            (COL_STATUS, 10),
        ):
            self.table.setColumnWidth(col, self.table.fontMetrics().averageCharWidth() * chars + 12)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.filter_edit, 1)
        top.addWidget(self.failures_only)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)

        self.filter_edit.textChanged.connect(self.proxy.set_text)
        self.failures_only.toggled.connect(self.proxy.set_failures_only)
        self._follow = True
        self.table.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.proxy.rowsInserted.connect(self._on_rows_inserted)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)

    def _on_current_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.selected.emit(self.request_id_at(current.row()) if current.isValid() else "")

    def request_id_at(self, visible_row: int) -> str:
        """The request id of a row as the filter shows it ("" for a local failure's "-")."""
        source = self.proxy.mapToSource(self.proxy.index(visible_row, 0)).row()
        request_id = self.model.row(source).texts[COL_ID]
        return "" if request_id == "-" else request_id

    def add_result(self, result: InferenceResult) -> None:
        self.model.add_result(result)

    def add_results(self, results: Iterable[InferenceResult]) -> None:
        self.model.add_results(results)

    def clear(self) -> None:
        self.model.clear()

    def visible_row_count(self) -> int:
        return self.proxy.rowCount()

    def visible_rows(self) -> list[tuple[str, ...]]:
        """The texts of the rows the filter shows, oldest first (the CSV export)."""
        rows: list[tuple[str, ...]] = []
        for r in range(self.proxy.rowCount()):
            source = self.proxy.mapToSource(self.proxy.index(r, 0)).row()
            rows.append(self.model.row(source).texts)
        return rows

    def _on_scrolled(self, value: int) -> None:
        self._follow = value >= self.table.verticalScrollBar().maximum()

    def _on_rows_inserted(self, *_args: object) -> None:
        if self._follow:
            self.table.scrollToBottom()
