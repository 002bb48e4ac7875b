"""Lines, zones and heat maps built into the viewer: the Events dock (a tab of the side column,
shown once there is something to count), the context every stream's zones share, and the
single live view's own zones (app/ui/zones/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from PySide6.QtWidgets import QDockWidget

from app.analytics.events import AnalyticsEvent
from app.ui.analyse_menu import AnalysisUi
from app.ui.base.scrolling import scrolling
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController, source_label
from app.ui.main_window import MainWindow
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.zones.events_panel import EventsPanel
from app.ui.zones.stream_zones import StreamZones, ZonesContext


@dataclass
class ZonesUi:
    context: ZonesContext
    panel: EventsPanel
    dock: QDockWidget
    single: StreamZones  # the single live view's


def build_zones(
    window: MainWindow,
    state: ViewerState,
    settings: ViewerSettings,
    live: LiveController,
    analysis: AnalysisUi,
    executor: Executor,
    tasks: TaskSet,
    report: Callable[[str, bool], None],
) -> ZonesUi:
    panel = EventsPanel(
        executor,
        tasks,
        report,
        start_dir=lambda: settings.last_dir("events"),
        remember_dir=lambda folder: settings.set_last_dir("events", folder),
    )
    dock = QDockWidget("Events", window)
    dock.setObjectName("EventsDock")  # saveState() needs names
    dock.setWidget(scrolling(panel))
    dock.setToolTip("Line crossings and zone entries and exits of the live streams")
    window.add_side_dock(dock)
    dock.hide()  # until there is a line or a zone to count with
    window.view_menu.insertAction(window.view_menu_toolbar_anchor, dock.toggleViewAction())

    def on_events(stream: str, events: Sequence[AnalyticsEvent], epoch0: float) -> None:
        panel.add(stream, events, epoch0)
        if dock.isHidden():
            dock.show()
            dock.raise_()

    context = ZonesContext(
        settings=settings,
        executor=executor,
        tasks=tasks,
        on_events=on_events,
        tracking_on=analysis.track_action.isChecked,
        start_tracking=lambda: analysis.set_tracking(True),
        report=report,
        dialog_parent=lambda: window,
    )
    single = StreamZones(live, context, lambda: live_label(live))
    single.attach(window.view)
    # The single view shows the live stream only in live mode (a batch's images otherwise).
    single.set_active(state.mode is Mode.LIVE)
    state.mode_changed.connect(lambda mode: single.set_active(mode is Mode.LIVE))

    def drawn() -> None:
        if not single.config.empty and dock.isHidden():
            dock.show()

    single.editor.changed.connect(drawn)
    return ZonesUi(context, panel, dock, single)


def live_label(live: LiveController) -> str:
    return source_label(live.source) if live.source is not None else ""
