"""SlowestTable: the slowest traced requests with their breakdown, one row each (the X-ray view's
"slowest 10"): the request, its time, the server's queue and compute, the network both ways,
the viewer's own share (callback, hand-over, paint) and the biggest finding of its diagnosis;
the whole breakdown in the row's tooltip. A row chosen: `chosen(request_id)`."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from app.inference.tracing import spans as names
from app.inference.tracing.diagnosis import breakdown, compute_ms, diagnose
from app.inference.tracing.spans import RequestTrace, server_spans_total_ms

COLUMNS = ("Request", "ms", "Queue", "Compute", "Net", "GUI", "Where it went")
TIPS = (
    "",
    "the whole request, as the client saw it",
    "queued on the server (ms)",
    "the server's compute: input, infer, output (ms)",
    "the network both ways (ms): the time in flight less the server's part",
    "the viewer's own share (ms): result callback, hand-over to the GUI, paint",
    "the biggest finding of the diagnosis",
)
GUI_STAGES = (names.CALLBACK, names.HANDOVER, names.PAINT)
ID_ROLE = Qt.ItemDataRole.UserRole


def figures(trace: RequestTrace) -> tuple[str, ...]:
    """One row's texts (ms with one decimal)."""
    queue = server_spans_total_ms(trace, (names.QUEUE,))
    network = float(trace.facts.get("network_ms", 0.0) or 0.0)
    gui = sum(s.duration_ms for s in trace.spans if s.name in GUI_STAGES)
    server = trace.has_server()
    return (
        trace.request_id,
        f"{trace.duration_ms:.1f}",
        f"{queue:.1f}" if server else "-",
        f"{compute_ms(trace):.1f}" if server else "-",
        f"{network:.1f}" if server else "-",
        f"{gui:.1f}",
        diagnose(trace)[0].message,
    )


class SlowestTable(QTableWidget):
    chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(list(COLUMNS))
        for col, tip in enumerate(TIPS):
            header_item = self.horizontalHeaderItem(col)
            if header_item is not None and tip:
                header_item.setToolTip(tip)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.setWordWrap(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.cellClicked.connect(self._clicked)
        self.cellActivated.connect(self._clicked)

    def set_traces(self, traces: list[RequestTrace]) -> None:
        """At most a handful of rows: rebuilt whole."""
        self.setRowCount(len(traces))
        for row, trace in enumerate(traces):
            tip = "; ".join(p.label for p in breakdown(trace))
            for col, text in enumerate(figures(trace)):
                item = QTableWidgetItem(text)
                item.setData(ID_ROLE, trace.request_id)
                item.setToolTip(tip)
                if 0 < col < len(COLUMNS) - 1:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.setItem(row, col, item)

    def row_texts(self, row: int) -> list[str]:
        items = [self.item(row, col) for col in range(self.columnCount())]
        return [item.text() if item is not None else "" for item in items]

    def _clicked(self, row: int, _col: int) -> None:
        item = self.item(row, 0)
        if item is not None:
            self.chosen.emit(str(item.data(ID_ROLE)))
