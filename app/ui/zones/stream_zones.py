"""StreamZones: the lines, zones and heat map of one live stream (a wall tile's, or the single
view's): drawn and edited on the picture that shows it, remembered per source in the settings,
exported and imported as the zones file `infer --zones` reads, and counted live with the
same `StreamAnalytics` the command line uses.

Counting: every ok result of the stream, once its track ids are on (the LiveController's
`observers`, after its result hook), is given to `StreamAnalytics.update` with the frame's
index and its capture time from the stream's first frame; older frames are ignored there. Its
events go to `on_events` (the Events panel); the counts are drawn with each painted frame.
The heat map takes every detection's anchor, tracked or not. Editing the zones starts the
counts again (a new StreamAnalytics); the heat map goes on. A (re)started stream starts both
again, and a stream that ends closes the visits still open (reason "ended").

Files: the zones file and the heat map's PNG are read and written on the executor.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from app.analytics.events import AnalyticsEvent
from app.analytics.heatmap import HeatMap
from app.analytics.stream import StreamAnalytics
from app.analytics.zones_file import ZonesConfig, load_zones, save_zones
from app.inference.result import InferenceResult
from app.pipeline.live import LiveState, frame_of
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController
from app.ui.view.image_view import ImageView
from app.ui.zones.heat_item import HeatItem
from app.ui.zones.zones_editor import ZonesEditor
from app.ui.zones.zones_item import ZonesItem

HEAT_INTERVAL_MS = 500  # the heat map overlay is redrawn twice a second while shown
ZONES_FILTER = "Zones (*.json);;All files (*)"
PNG_FILTER = "PNG image (*.png)"

EventsSink = Callable[[str, Sequence[AnalyticsEvent], float], None]  # (stream, events, its start: epoch s)


@dataclass(frozen=True)
class ZonesContext:
    """What every stream's zones are built with (the viewer's parts)."""

    settings: ViewerSettings
    executor: Executor
    tasks: TaskSet
    on_events: EventsSink
    tracking_on: Callable[[], bool]
    start_tracking: Callable[[], None]  # counting needs track ids: drawing a shape switches it on
    report: Callable[[str, bool], None]
    dialog_parent: Callable[[], QWidget]


def source_key(source: int | str | None) -> str | None:
    """How a source is named in the settings: a file by its absolute path, a camera "camera N"."""
    if source is None:
        return None
    if isinstance(source, int):
        return f"camera {source}"
    if "://" in source:
        return source
    return str(Path(source).resolve())


class StreamZones(QObject):
    heat_toggled = Signal(bool)

    def __init__(
        self,
        live: LiveController,
        context: ZonesContext,
        label: Callable[[], str],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.live, self.context, self._label = live, context, label
        self.item = ZonesItem()
        self.heat_item = HeatItem()
        self.editor = ZonesEditor(self.item, self)
        self.editor.menu_hooks.append(self._menu)
        self.editor.changed.connect(self._edited)
        self.editor.hint.connect(lambda text: context.report(text, False) if text else None)
        self.key: str | None = None  # the source the zones are of (None: nothing plays)
        self.analytics: StreamAnalytics | None = None
        self.heatmap: HeatMap | None = None
        self.events: list[AnalyticsEvent] = []  # this run's (also in the Events panel)
        self._t0: float | None = None  # the first frame's capture time (monotonic)
        self._epoch0 = 0.0  # ... as wall-clock time
        self._state = LiveState.IDLE
        self._view: ImageView | None = None
        self._heat_on = False
        self._heat_timer = QTimer(self)
        self._heat_timer.setInterval(HEAT_INTERVAL_MS)
        self._heat_timer.timeout.connect(self.refresh_heat)
        live.observers.append(self._observe)
        live.painted.connect(self._painted)
        live.state_changed.connect(self._state_changed)

    # -- where it is drawn ------------------------------------------------------------------------------
    def attach(self, view: ImageView) -> None:
        if self._view is view:
            return
        self.detach()
        self._view = view
        view.scene().addItem(self.heat_item)
        view.scene().addItem(self.item)
        self.item.set_view_scale(view.zoom_factor())
        self.editor.attach(view)

    def set_active(self, on: bool) -> None:
        """The view shows this stream (on), or something else (a batch's image): its shapes are
        neither drawn nor edited meanwhile."""
        self.editor.active = on
        if not on:
            self.editor.cancel()
        self.item.setVisible(on)
        self.heat_item.setVisible(on and self._heat_on)

    def detach(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            view.scene().removeItem(self.item)
            view.scene().removeItem(self.heat_item)
        self.editor.detach()

    # -- the source's zones -----------------------------------------------------------------------------
    def load(self, source: int | str | None) -> None:
        """The zones remembered for `source` (none: an empty set), counting from scratch."""
        self.key = source_key(source)
        config = self.context.settings.zones(self.key) if self.key is not None else None
        self.editor.set_config(config or ZonesConfig())
        self._restart_counts()

    @property
    def config(self) -> ZonesConfig:
        return self.editor.draft.config()

    def set_config(self, config: ZonesConfig) -> None:
        """Replace the lines and zones (an imported file), remembered and counted from now on."""
        self.editor.set_config(config)
        self._edited()

    def _edited(self) -> None:
        config = self.config
        if self.key is not None:
            self.context.settings.set_zones(self.key, config)
        self._restart_counts(keep_heat=True)
        if not config.empty and not self.context.tracking_on():
            self.context.start_tracking()
            self.context.report("Tracking switched on: lines and zones count tracked objects", False)

    def _restart_counts(self, keep_heat: bool = False) -> None:
        if not keep_heat:
            self.heatmap = None
            self._t0 = None
        self.analytics = None
        self.events = []
        self.item.set_snapshot(None)

    # -- counting (GUI thread, as results arrive) -------------------------------------------------------
    def _observe(self, result: InferenceResult) -> None:
        frame = frame_of(result)
        if self._t0 is None:
            self._t0 = frame.timestamp
            self._epoch0 = time.time() - (time.monotonic() - frame.timestamp)
        if self.heatmap is None:
            width, height = frame.source_size
            self.heatmap = HeatMap(width, height)
        if self.analytics is None:
            source = source_label_of(self.live.source)
            self.analytics = StreamAnalytics(self.config, source=source, heatmap=self.heatmap)
        self._emit(self.analytics.update(frame.index, frame.timestamp - self._t0, result.detections))

    def _emit(self, events: list[AnalyticsEvent]) -> None:
        if events:
            self.events.extend(events)
            self.context.on_events(self._label(), events, self._epoch0)

    def _painted(self, _result: InferenceResult) -> None:
        if self.analytics is not None and not self.config.empty:
            self.item.counting = self.context.tracking_on()
            self.item.set_snapshot(self.analytics.snapshot())

    def _state_changed(self, state: LiveState, _detail: str) -> None:
        if state is LiveState.PLAYING and self._state is not LiveState.PAUSED:
            self.load(self.live.source)  # a (re)start: its source's zones, counts from 0
        elif state in (LiveState.ENDED, LiveState.STOPPED, LiveState.FAILED) and self.analytics is not None:
            self._emit(self.analytics.finish())  # the visits still open end here
        self._state = state

    # -- the heat map -----------------------------------------------------------------------------------
    @property
    def heat_shown(self) -> bool:
        return self._heat_on

    def show_heat(self, on: bool) -> None:
        self._heat_on = on
        self.heat_item.setVisible(on and self.editor.active)
        if on:
            self.refresh_heat()
            self._heat_timer.start()
        else:
            self._heat_timer.stop()
        self.heat_toggled.emit(on)

    def refresh_heat(self) -> None:
        if self.heatmap is not None:
            self.heat_item.set_layer(self.heatmap.layer_rgba(), (self.heatmap.width, self.heatmap.height))

    async def export_heat(self, path: str) -> None:
        """The heat map over the frame shown (or black), as a PNG at the source's size."""
        heatmap = self.heatmap
        if heatmap is None:
            self.context.report("No heat map yet: nothing has been seen on this stream", True)
            return
        snapshot = copy.deepcopy(heatmap)  # (the GUI thread goes on adding to the live one)
        shown = self.live.shown_result
        picture = frame_of(shown).image if shown is not None else None
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self.context.executor, snapshot.save_png, path, picture)
        except OSError as e:
            self.context.report(f"heat map not saved: {e}", True)
            return
        self.context.report(f"Heat map saved to {path}", False)

    # -- files ------------------------------------------------------------------------------------------
    async def export_zones(self, path: str) -> None:
        config = self.config
        if config.empty:
            self.context.report("No line or zone to export: draw one first", True)
            return
        if self.heatmap is not None:  # the size of the source the points are in
            config = ZonesConfig(config.lines, config.zones, (self.heatmap.width, self.heatmap.height))
        try:
            await asyncio.get_running_loop().run_in_executor(self.context.executor, save_zones, config, path)
        except OSError as e:
            self.context.report(f"zones not exported: {e}", True)
            return
        self.context.report(f"Zones exported to {path}", False)

    async def import_zones(self, path: str) -> None:
        try:
            config = await asyncio.get_running_loop().run_in_executor(self.context.executor, load_zones, path)
        except ValueError as e:  # ZonesFileError names the file and the field
            self.context.report(str(e), True)
            return
        self.set_config(config)
        self.context.report(f"Zones imported from {path}", False)

    # -- the picture's menu -----------------------------------------------------------------------------
    def _menu(self, menu: QMenu) -> None:
        heat = menu.addAction("Heat map")
        heat.setCheckable(True)
        heat.setChecked(self.heat_shown)
        heat.toggled.connect(self.show_heat)
        menu.addAction("Export the heat map (PNG)…", self._ask_export_heat)
        menu.addSeparator()
        menu.addAction("Import zones…", self._ask_import)
        export = menu.addAction("Export zones…", self._ask_export)
        export.setEnabled(not self.config.empty)

    def _ask(self, title: str, save: bool, filters: str, suffix: str) -> str:
        parent = self.context.dialog_parent()
        folder = self.context.settings.last_dir("zones") or str(Path.home())
        ask = QFileDialog.getSaveFileName if save else QFileDialog.getOpenFileName
        path, _ = ask(parent, title, folder, filters, options=QFileDialog.Option.DontUseNativeDialog)
        if path and save and not path.lower().endswith(suffix):
            path += suffix
        if path:
            self.context.settings.set_last_dir("zones", str(Path(path).parent))
        return path

    def _ask_export_heat(self) -> None:
        if path := self._ask("Export the heat map", True, PNG_FILTER, ".png"):
            self.context.tasks.spawn(self.export_heat(path), name="export the heat map")

    def _ask_import(self) -> None:
        if path := self._ask("Import zones", False, ZONES_FILTER, ".json"):
            self.context.tasks.spawn(self.import_zones(path), name="import zones")

    def _ask_export(self) -> None:
        if path := self._ask("Export zones", True, ZONES_FILTER, ".json"):
            self.context.tasks.spawn(self.export_zones(path), name="export zones")


def source_label_of(source: int | str | None) -> str:
    """The `source` of event records: the path or URL as given, "camera N" for a camera."""
    if source is None:
        return ""
    return f"camera {source}" if isinstance(source, int) else source
