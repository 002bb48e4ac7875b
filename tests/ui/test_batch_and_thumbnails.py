from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from app.pipeline.batch import BatchCounts
from app.pipeline.thumbnails import THUMB_SIZE, make_thumbnail
from app.ui.batch.batch_panel import BatchPanel, summary_text
from app.ui.batch.thumbnail_strip import ICON_SIZE, ThumbnailStrip


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_batch_panel_progress_and_summary(qtbot: QtBot) -> None:
    clock = FakeClock()
    panel = BatchPanel(clock=clock)
    qtbot.addWidget(panel)
    panel.start(312)
    clock.now += 2.0
    panel.set_progress(150)
    assert panel.progress_text() == "150 / 312 · 75 img/s"
    assert panel.progress.value() == 150
    assert panel.cancel_button.isEnabled()
    panel.finish(BatchCounts(312, ok=309, failed=2, skipped=1, sent=311), 4.1)
    assert panel.summary.text() == "312 inputs · 309 ok · 2 failed · 1 skipped · 4.1 s · 76 img/s"
    assert not panel.cancel_button.isEnabled()
    assert summary_text(BatchCounts(1, ok=1, sent=1), 0.5) == "1 input · 1 ok · 0 failed · 0.5 s · 2.0 img/s"
    # One file that cannot be read, in no time: no request, no absurd rate.
    unread = BatchCounts(1, failed=1)
    assert summary_text(unread, 0.0004) == "1 input · 0 ok · 1 failed · 0.0 s · 0.0 img/s"
    cancelled = BatchCounts(10, ok=3, timeout=1, cancelled=2, not_started=4, sent=6)
    assert summary_text(cancelled, 1.0) == (
        "10 inputs · 3 ok · 0 failed · 1 timed out · 6 cancelled · 1.0 s · 4.0 img/s"
    )
    # Nothing found is said in words, never as "0 inputs · 0 ok".
    panel.start(0)
    panel.finish(BatchCounts(0), 0.1)
    assert panel.summary.text().startswith("nothing was run: no image, video or folder entry was found")
    assert panel.progress_text() == "nothing found"


def test_batch_panel_cancel_emits(qtbot: QtBot) -> None:
    panel = BatchPanel()
    qtbot.addWidget(panel)
    panel.start(10)
    with qtbot.waitSignal(panel.cancel_requested, timeout=200):
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert not panel.cancel_button.isEnabled()  # no double cancel


def test_make_thumbnail_keeps_aspect() -> None:
    thumb = make_thumbnail(np.zeros((480, 640, 3), np.uint8))
    assert thumb.shape == (72, 96, 3)
    small = np.zeros((10, 20, 3), np.uint8)
    assert make_thumbnail(small).shape == (10, 20, 3)


def test_thumbnail_strip_selected_and_status(qtbot: QtBot) -> None:
    strip = ThumbnailStrip()
    qtbot.addWidget(strip)
    img = np.full((300, 200, 3), 200, np.uint8)
    strip.add_item("dir/a.jpg", img, None)
    strip.add_item("dir/b.jpg", img, True)
    strip.add_item("dir/a.jpg", img, None)  # same key: replaced, not duplicated
    assert strip.count() == 2 and strip.keys() == ["dir/a.jpg", "dir/b.jpg"]
    assert strip.iconSize().width() == ICON_SIZE
    strip.set_status("dir/a.jpg", False)
    assert strip.status("dir/a.jpg") is False
    item = strip.item_for("dir/a.jpg")
    assert item is not None and "failed" in item.toolTip()
    # The failure marker is painted in red on the icon.
    pm = item.icon().pixmap(THUMB_SIZE, THUMB_SIZE).toImage()
    c = pm.pixelColor(THUMB_SIZE - 10, 10)
    assert c.red() > 180 and c.green() < 90
    with qtbot.waitSignal(strip.selected, timeout=200) as blocker:
        strip.setCurrentRow(1)
    assert blocker.args == ["dir/b.jpg"]
    # Detection counts: a green badge with the number, a hollow grey "0" without any.
    strip.set_count("dir/b.jpg", 3)
    item_b = strip.item_for("dir/b.jpg")
    assert item_b is not None and "3 detection" in item_b.toolTip()
    badge = item_b.icon().pixmap(THUMB_SIZE, THUMB_SIZE).toImage().pixelColor(THUMB_SIZE - 6, 12)
    assert (badge.red(), badge.green(), badge.blue()) == (20, 110, 60)
    strip.set_count("dir/b.jpg", 0)
    assert "no detections" in item_b.toolTip()
    ring = item_b.icon().pixmap(THUMB_SIZE, THUMB_SIZE).toImage().pixelColor(THUMB_SIZE - 4, 12)
    assert abs(ring.red() - 120) < 30 and abs(ring.green() - 120) < 30
    strip.set_hidden("dir/a.jpg", True)
    assert strip.visible_keys() == ["dir/b.jpg"]
