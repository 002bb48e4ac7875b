from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.ui.widgets.thresholds import ThresholdsWidget


def test_sliders_emit_changed_with_values(qtbot: QtBot) -> None:
    w = ThresholdsWidget(score=0.25, iou=0.45)
    qtbot.addWidget(w)
    assert (w.score(), w.iou()) == (0.25, 0.45)
    seen: list[tuple[float, float]] = []
    w.changed.connect(lambda s, i: seen.append((s, i)))
    w.score_slider().setValue(60)
    w.iou_slider().setValue(30)
    assert seen == [(0.6, 0.45), (0.6, 0.3)]
    assert w.shown_values() == ("0.60", "0.30")


def test_set_values_emits_once_and_clamps(qtbot: QtBot) -> None:
    w = ThresholdsWidget()
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.changed, timeout=100) as blocker:
        w.set_values(1.5, 0.7)
    assert blocker.args == [1.0, 0.7]
    assert w.shown_values() == ("1.00", "0.70")
    with qtbot.assertNotEmitted(w.changed):
        w.set_values(1.0, 0.7)
