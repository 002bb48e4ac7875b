"""LiveController on the GUI thread, without a server: coalescing of results between paints,
never stepping back to an older frame, counting every result."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from pytestqt.qtbot import QtBot

from app.inference.result import Detection, InferenceResult, Status
from app.sources.frame import Frame
from app.ui.analysis.stats_panel import StatsPanel
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget

pytestmark = pytest.mark.gui


@pytest.fixture
def live(qtbot: QtBot) -> Iterator[LiveController]:
    view, thresholds, panel = ImageView(), ThresholdsWidget(0.5, 0.3), StatsPanel()
    for w in (view, thresholds, panel):
        qtbot.addWidget(w)
    reports: list[tuple[str, bool]] = []
    with ThreadPoolExecutor(1) as executor:
        controller = LiveController(
            view, thresholds, panel, executor, TaskSet(), GuiBridge(), lambda m, e: reports.append((m, e))
        )
        controller.reports = reports  # type: ignore[attr-defined]
        yield controller


def result(index: int, status: Status = Status.OK, score: float = 0.9) -> InferenceResult:
    image = np.full((48, 64, 3), index, np.uint8)
    frame = Frame(index, image, "test.mp4", time.monotonic())
    det = Detection((float(index), 1.0, float(index) + 10.0, 11.0), score, 0, "face")
    return InferenceResult(
        f"r{index}",
        status,
        source="test.mp4",
        frame=index,
        detections=[det],
        tag=frame,
        error=None if status is Status.OK else "boom",
    )


def test_a_burst_of_results_is_drawn_once_newest_first(live: LiveController, qtbot: QtBot) -> None:
    shown: list[int] = []
    live.frame_shown.connect(lambda index, _age: shown.append(index))
    run = live.run_id
    for index in (3, 5, 4):  # arrive out of order, all before the next paint
        live.on_result(run, result(index))
    qtbot.waitUntil(lambda: shown == [5])
    assert live.view.box_items()[0].detection.box[0] == 5.0  # the boxes of frame 5 on frame 5
    stats = live.display_stats()
    assert (stats.results, stats.shown, stats.coalesced) == (3, 1, 2)
    # An older frame after a newer one was drawn: counted, never drawn.
    live.on_result(run, result(4))
    live.on_result(run, result(6))
    qtbot.waitUntil(lambda: shown == [5, 6])
    qtbot.waitUntil(lambda: not live.paint_pending)  # the paint pass is over: nothing more is drawn
    assert shown == [5, 6] and live.display_stats().results == 5


def test_results_of_a_stopped_run_are_logged_not_drawn(live: LiveController, qtbot: QtBot) -> None:
    shown: list[int] = []
    logged: list[InferenceResult] = []
    live.frame_shown.connect(lambda index, _age: shown.append(index))
    live.result.connect(logged.append)
    live.on_result(live.run_id - 1, result(1))  # a stopped run's result
    assert not live.paint_pending, "no paint pass scheduled: it can never be drawn"
    assert shown == [] and live.display_stats().results == 0
    assert [r.frame for r in logged] == [1]


def test_failed_frames_are_reported_once_per_interval(live: LiveController, qtbot: QtBot) -> None:
    run = live.run_id
    for index in range(10):
        live.on_result(run, result(index, Status.FAILED))
    reports = live.reports  # type: ignore[attr-defined]
    assert len(reports) == 1 and reports[0][1] is True
    assert "test.mp4 frame 0: boom" in reports[0][0]
    assert not live.paint_pending, "no paint pass scheduled: a failed frame is never drawn"
    assert not live.view.has_image()


def test_thresholds_refilter_the_shown_frame(live: LiveController, qtbot: QtBot) -> None:
    live.on_result(live.run_id, result(1, score=0.6))
    qtbot.waitUntil(lambda: len(live.view.box_items()) == 1)
    live.thresholds.score_slider().setValue(70)
    assert live.view.box_items() == []
    live.thresholds.score_slider().setValue(50)
    assert len(live.view.box_items()) == 1
