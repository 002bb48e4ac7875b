"""The wall of streams built into the viewer: its controller and controls, wired to the live
view it shares the window's middle with, to the tracking switch, and to the request log and
statistics every stream's results go to (app/ui/wall/); with the lines, zones and heat maps
of every live picture and the Events dock (zones_setup.py)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from app.inference.core.spec import ProfileSource
from app.pipeline.live import LiveOptions
from app.ui.analyse_menu import AnalysisUi
from app.ui.base.bridge import GuiBridge
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.image_list import ImageList
from app.ui.live.live_controller import LiveController
from app.ui.live.live_panel import LiveUi
from app.ui.main_window import MainWindow
from app.ui.result_router import ResultRouter
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.wall.wall_controller import WallController
from app.ui.wall.wall_stream import WallParts, WallStream
from app.ui.wall.wall_ui import WallUi
from app.ui.zones_setup import ZonesUi, build_zones


def build_wall(
    window: MainWindow,
    state: ViewerState,
    settings: ViewerSettings,
    live: LiveController,
    live_ui: LiveUi,
    images: ImageList,
    router: ResultRouter,
    analysis: AnalysisUi,
    profile_for: Callable[[str | None], ProfileSource],
    executor: Executor,
    tasks: TaskSet,
    bridge: GuiBridge,
    report: Callable[[str, bool], None],
) -> tuple[WallUi, ZonesUi]:
    """The wall's controls (their `wall`: the controller) and the zones' parts."""
    zones = build_zones(window, state, settings, live, analysis, executor, tasks, report)
    parts = WallParts(
        window.thresholds,
        window.stats_panel,
        executor,
        tasks,
        bridge,
        profile_for,
        tracking_library=analysis.tracking.load_library,
        zones=zones.context,
    )

    def take_view() -> None:
        live.release_view()  # nothing of an old single stream is drawn over the focused one
        images.live_takes_view()

    def give_back_view() -> None:
        if not images.back_to_batch():
            state.set_mode(Mode.EMPTY)

    wall = WallController(
        window.pages,
        window.view,
        state,
        parts,
        options=lambda: LiveOptions(**vars(live.options)),
        take_view=take_view,
        give_back_view=give_back_view,
        report=report,
        results=router.live_result,
    )
    ui = WallUi(window, wall, live, live_ui, executor, tasks)
    wall.started.connect(router.stats.live_started)  # the live scope counts the wall's results
    live.view_taken.connect(wall.close_all)  # a single stream opened: it takes the live view
    track = analysis.track_action

    # Analyse > Track objects switches every tile; a tile's own menu switches that tile alone,
    # and a new tile starts as the switch is.
    known: set[WallStream] = set()  # the tiles there at the last change

    def follow_tracking(every: bool) -> None:
        for stream in wall.streams:
            if (every or stream not in known) and stream.tracking.enabled != track.isChecked():
                stream.tracking.set_enabled(track.isChecked())
        known.clear()
        known.update(wall.streams)

    track.toggled.connect(lambda _on: follow_tracking(every=True))
    wall.streams_changed.connect(lambda: follow_tracking(every=False))
    single, tracking = zones.single, analysis.tracking

    def focus_changed(stream: WallStream | None) -> None:
        # One editor on the single view at a time: the focused stream's, else the single's own;
        # the Tracks panel lists the focused stream's tracks.
        if stream is not None:
            single.detach()
            tracking.panel_tracker = lambda: stream.tracking.tracker
        else:
            single.attach(window.view)
            tracking.panel_tracker = None
        tracking.refresh_panel()

    wall.focus_changed.connect(focus_changed)
    return ui, zones
