"""Docks and hints that stay true: every dock comes back from the View menu, the time split
keeps the last requests' split when idle, the Tracks dock names the right menu and follows
tracking after Reset layout."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtWidgets import QApplication, QTabBar

from app.server.embedded import EmbeddedServer
from app.ui.analysis.time_split import NO_DATA
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_every_dock_comes_back_from_the_view_menu(harness: Harness, triton: EmbeddedServer) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    w = viewer.window
    titles = {a.text() for a in w.view_menu.actions()}
    for dock in w.findChildren(type(w.time_dock)):
        if dock.parent() is w:
            assert dock.windowTitle() in titles, f"View has no entry for {dock.windowTitle()!r}"
    w.time_dock.toggleViewAction().trigger()  # closed (its own close button does the same)
    QApplication.processEvents()
    assert w.time_dock.isHidden()
    (entry,) = [a for a in w.view_menu.actions() if a.text() == "Time split"]
    entry.trigger()
    QApplication.processEvents()
    assert not w.time_dock.isHidden(), "View > Time split (where the time goes) brings it back"


def test_the_time_split_keeps_the_last_requests_split_when_idle(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    split = viewer.window.time_split
    viewer.try_sample()
    harness.run(until(lambda: job_done(viewer), what="the sample"))
    harness.run(until(lambda: bool(split.segments), what="the split of the sample's request"))
    assert split.note.text() != NO_DATA
    harness.run(asyncio.sleep(10.8))  # longer than the statistics' 10 s window: idle
    QApplication.processEvents()
    assert split.segments, "the last split stays shown"
    assert "No successful request yet" not in split.note.text()
    assert "last" in split.note.text(), split.note.text()


def test_tracking_is_in_the_live_toolbar_and_menu_and_view_has_the_tracks_dock(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    analysis, w, bar = viewer.analysis, viewer.window, viewer.live_ui.toolbar
    assert analysis.track_action in viewer.live_ui.menu.actions(), "Live > Track objects"
    assert analysis.track_action in bar.actions(), "the Live toolbar's Track"
    button = bar.widgetForAction(analysis.track_action)
    assert button is not None and button.text() == "Track"
    button.click()  # the toolbar's button turns tracking on, and the Tracks dock shows
    QApplication.processEvents()
    assert analysis.tracking.enabled and not analysis.tracks_dock.isHidden()
    (entry,) = [a for a in w.view_menu.actions() if a.text() == "Tracks"]
    entry.trigger()  # View > Tracks: the dock goes (tracking stays on)
    QApplication.processEvents()
    assert analysis.tracks_dock.isHidden() and analysis.tracking.enabled
    entry.trigger()
    QApplication.processEvents()
    assert not analysis.tracks_dock.isHidden()
    analysis.track_action.trigger()  # off


def test_the_tracks_dock_names_the_analyse_menu_and_follows_tracking_after_reset(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    analysis = viewer.analysis
    w = viewer.window
    menus = {a.text().replace("&", ""): a.menu() for a in w.menuBar().actions()}
    assert analysis.track_action in menus["Analyse"].actions()  # type: ignore[union-attr]
    analysis.track_action.trigger()  # on: the dock shows
    QApplication.processEvents()
    assert not analysis.tracks_dock.isHidden()
    analysis.track_action.trigger()  # off
    QApplication.processEvents()
    hint = analysis.tracks_panel.summary.text()
    assert "Analyse > Track objects" in hint and "Live toolbar" in hint, hint
    w.reset_layout()
    QApplication.processEvents()
    assert analysis.tracks_dock.isHidden(), "Reset layout with tracking off: no Tracks dock"
    analysis.track_action.trigger()  # on again: Reset layout keeps it
    w.reset_layout()
    QApplication.processEvents()
    assert not analysis.tracks_dock.isHidden()
    analysis.track_action.trigger()


def test_every_dock_tab_shows_its_title_whole_with_every_side_dock_open(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    w = viewer.window
    w.resize(1024, 640)
    for dock in (viewer.analysis.tracks_dock, viewer.server_tools.metrics_dock, viewer.evaluation.dock):
        dock.show()
    QApplication.processEvents()
    bars = [bar for bar in w.findChildren(QTabBar) if bar.isVisible() and bar.count() > 0]
    titles = [bar.tabText(i) for bar in bars for i in range(bar.count())]
    assert {"Tracks", "Server", "Evaluation", "Detections", "Statistics"} <= set(titles), titles
    for bar in bars:
        for i in range(bar.count()):
            text = bar.tabText(i)
            assert bar.tabRect(i).width() >= bar.fontMetrics().horizontalAdvance(text), f"{text!r} cut"
    harness.close(viewer)
