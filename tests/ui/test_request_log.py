from __future__ import annotations

import time

from PySide6.QtCore import QModelIndex, Qt
from pytestqt.qtbot import QtBot

from app.inference.result import Status
from app.ui.analysis.request_log import (
    CANCELLED_BACKGROUND,
    COL_ERROR,
    COL_ID,
    COL_LATENCY,
    COL_STATUS,
    COLUMNS,
    FAILED_BACKGROUND,
    RequestLog,
    RequestLogModel,
)

from .helpers import make_result


def _ids(log: RequestLog) -> list[str]:
    p = log.proxy
    return [p.index(r, COL_ID).data() for r in range(p.rowCount())]


def test_model_rows_columns_and_colours(qtbot: QtBot) -> None:
    model = RequestLogModel()
    model.add_result(make_result(1))
    model.add_results(
        [make_result(2, Status.FAILED), make_result(3, Status.TIMEOUT), make_result(4, Status.CANCELLED)]
    )
    assert model.rowCount() == 4 and model.columnCount() == len(COLUMNS) == 6
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) == "Request id"
    assert model.index(0, COL_LATENCY).data() == "6.0"
    assert model.index(1, COL_STATUS).data() == "failed"
    assert model.index(1, COL_ERROR).data() == "failed #2"
    bg = Qt.ItemDataRole.BackgroundRole
    assert model.index(0, 0).data(bg) is None
    assert model.index(1, 0).data(bg) == FAILED_BACKGROUND
    assert model.index(2, 0).data(bg) == FAILED_BACKGROUND
    assert model.index(3, 0).data(bg) == CANCELLED_BACKGROUND


def test_text_filter_and_failures_only(qtbot: QtBot) -> None:
    log = RequestLog()
    qtbot.addWidget(log)
    log.add_results(
        [
            make_result(1, source="cats/a.jpg"),
            make_result(2, Status.FAILED, source="cats/b.jpg", error="connection refused"),
            make_result(3, Status.TIMEOUT, source="dogs/c.jpg"),
            make_result(4, Status.CANCELLED, source="dogs/d.jpg"),
        ]
    )
    assert log.visible_row_count() == 4
    log.filter_edit.setText("CATS")
    assert _ids(log) == ["req-1", "req-2"]
    log.filter_edit.setText("refused")  # matches the error column
    assert _ids(log) == ["req-2"]
    log.filter_edit.clear()
    log.failures_only.setChecked(True)
    assert _ids(log) == ["req-2", "req-3"]
    log.filter_edit.setText("dogs")
    assert _ids(log) == ["req-3"]
    log.failures_only.setChecked(False)
    assert _ids(log) == ["req-3", "req-4"]
    # New rows respect the active filter.
    log.add_result(make_result(5, source="dogs/e.jpg"))
    log.add_result(make_result(6, source="cats/f.jpg"))
    assert _ids(log) == ["req-3", "req-4", "req-5"]


def test_bounded_drops_oldest_with_remove_rows(qtbot: QtBot) -> None:
    model = RequestLogModel(max_rows=100)
    removed: list[tuple[int, int]] = []
    model.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    model.add_results([make_result(i) for i in range(80)])
    model.add_results([make_result(i) for i in range(80, 130)])
    assert model.rowCount() == 100
    assert removed == [(0, 29)]
    assert model.index(0, COL_ID).data() == "req-30"
    assert model.index(99, COL_ID).data() == "req-129"
    model.add_results([make_result(i) for i in range(1000, 1250)])  # a batch larger than the bound
    assert model.rowCount() == 100
    assert model.index(0, COL_ID).data() == "req-1150"
    assert model.index(0, 0, QModelIndex()).isValid()


def test_appending_many_batches_is_cheap(qtbot: QtBot) -> None:
    log = RequestLog(max_rows=10_000)
    qtbot.addWidget(log)
    log.show()
    batches = [[make_result(b * 50 + i) for i in range(50)] for b in range(400)]  # 20,000 rows
    t0 = time.perf_counter()
    for batch in batches:
        log.add_results(batch)
    elapsed = time.perf_counter() - t0
    assert log.model.rowCount() == 10_000
    assert log.visible_row_count() == 10_000
    assert elapsed < 10.0, f"{elapsed:.2f} s for 20,000 rows"  # one at a time: minutes


def test_a_long_source_path_keeps_its_file_name_visible(qtbot: QtBot) -> None:
    from PySide6.QtWidgets import QStyleOptionViewItem

    from app.ui.analysis.request_log import COL_SOURCE

    log = RequestLog()
    qtbot.addWidget(log)
    path = "/home/someone/pictures/holidays/2024/a-rather-long-folder-name/IMG_20240812_1432.jpg"
    log.add_results([make_result(1, source=path)])
    index = log.proxy.index(0, COL_SOURCE)
    delegate = log.table.itemDelegateForColumn(COL_SOURCE)
    assert delegate is not None
    option = QStyleOptionViewItem()
    delegate.initStyleOption(option, index)
    assert option.textElideMode == Qt.TextElideMode.ElideMiddle
    width = log.table.columnWidth(COL_SOURCE) - 8
    shown = option.fontMetrics.elidedText(path, option.textElideMode, width)
    assert "…" in shown and shown.endswith("1432.jpg"), shown
    assert index.data(Qt.ItemDataRole.ToolTipRole) == path  # the whole path under the mouse
