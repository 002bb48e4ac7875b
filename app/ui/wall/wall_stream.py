"""WallStream: one source of the wall, played by a LiveController of its own (its own run, its
own in-flight window, frames decoded at its tile's size) into its tile's view, or into the
single view while it has the focus.

Sessions: a stream of the session's model feeds the viewer's session itself (a request group
of its own: its window); a stream whose tile chooses another model gets a session of its own
over the viewer's session's channels (app.inference.core.shared_channels), opened and closed
on the executor, never on the GUI thread. Such a session lives no longer than the viewer's:
it is closed when the viewer's session closes and opened again on the next one.

Failures stay in the tile: the controller's reports (a source that cannot open, a file that
ended, a model failing on every frame) go to the tile's message, never to the banner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.shared_channels import sharing_spec
from app.inference.core.spec import ProfileSource
from app.pipeline.display import DisplayStats
from app.pipeline.live import LiveOptions, LiveState
from app.pipeline.wall_figures import StreamFigures
from app.ui.analysis.stats_panel import StatsPanel
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.live.live_controller import LiveController, source_label
from app.ui.live.recording import RecordingState
from app.ui.view.image_view import ImageView
from app.ui.wall.stream_tile import StreamTile
from app.ui.wall.stream_tracking import StreamTracking
from app.ui.widgets.thresholds import ThresholdsWidget
from app.ui.zones.stream_zones import StreamZones, ZonesContext

log = logging.getLogger(__name__)

SESSION_CLOSE_DRAIN_S = 0.2


@dataclass(frozen=True)
class WallParts:
    """What every stream of the wall is built with (the viewer's shared parts)."""

    thresholds: ThresholdsWidget
    stats_panel: StatsPanel
    executor: Executor
    tasks: TaskSet
    bridge: GuiBridge
    profile_for: Callable[[str | None], ProfileSource]
    tracking_library: Callable[[], Future[None] | None]  # its import, started on the first call
    zones: ZonesContext | None = None  # its lines, zones and heat map (None: none)


class WallStream(QObject):
    changed = Signal()  # its state changed (playing, failed, ended...)

    def __init__(self, source: int | str, parts: WallParts, options: LiveOptions) -> None:
        super().__init__()
        self.source = source
        self.label = source_label(source)
        self.parts = parts
        self.tile = StreamTile(self.label, options.max_in_flight)
        self.controller = LiveController(
            self.tile.view,
            parts.thresholds,
            parts.stats_panel,
            parts.executor,
            parts.tasks,
            parts.bridge,
            self._report,
        )
        self.controller.options = dataclasses.replace(options)
        self.tracking = StreamTracking(self.controller, parts.tracking_library)
        self.tracking.attach(self.tile.view)
        self.zones: StreamZones | None = None
        if parts.zones is not None:
            self.zones = StreamZones(self.controller, parts.zones, lambda: self.label, self)
            self.zones.attach(self.tile.view)
            # A double-click while a zone is drawn closes it: it does not focus the tile.
            editor = self.zones.editor
            self.tile.accepts_focus_click = lambda: not editor.busy
        self.model: str | None = None  # None: the viewer's session's model
        self.own_session: TritonSession | None = None
        self._base: TritonSession | None = None  # the viewer's session
        self._opening = 0  # bumped by every model choice: a late open is closed, not used
        self.closed = False
        self.tile.model_chosen.connect(self.choose_model)
        self.tile.in_flight_changed.connect(self.controller.set_max_in_flight)
        self.controller.state_changed.connect(self._state_changed)
        self.controller.recorder.state_changed.connect(self._recording_changed)

    # -- what it shows ------------------------------------------------------------------------------
    @property
    def state(self) -> LiveState:
        return self.controller.state

    @property
    def view(self) -> ImageView:
        """The view it draws into now (its tile's, or the single view while focused)."""
        return self.controller.view

    def attach(self, view: ImageView) -> None:
        """Draw into `view` from now on (the focus, and back to the tile)."""
        self.controller.set_view(view)
        self.tracking.attach(view)
        if self.zones is not None:
            self.zones.attach(view)

    def figures(self) -> StreamFigures:
        return StreamFigures.of(self.display_stats(), self.controller.stats())

    def display_stats(self) -> DisplayStats:
        return self.controller.display_stats()

    def _report(self, message: str, error: bool) -> None:
        """Errors and the recording's notes (armed, where it went, what was written) go to
        the tile: never to the banner, which is the single view's."""
        if not self.closed:
            self.tile.show_message(message.splitlines()[0], error=error, tooltip=message)

    def _recording_changed(self, state: RecordingState) -> None:
        self.tile.set_recording(state is RecordingState.RECORDING, armed=state is RecordingState.ARMED)

    def _state_changed(self, state: LiveState, detail: str) -> None:
        self.tile.set_state(state, detail)
        self.changed.emit()

    # -- playing --------------------------------------------------------------------------------------
    def start(self) -> None:
        """Opens the source once a session is there (WAITING until then)."""
        self.controller.open(self.source)

    def set_session(self, session: TritonSession | None) -> None:
        """The viewer's session opened (or is closing: None)."""
        self._base = session
        if session is not None:
            names = sorted({m.name for m in session.models if m.ready})
            model = session.info.name if session.info is not None else None
            self.tile.set_models(names, model, self.model)
        if self.model is None:
            self.controller.set_session(session)
            return
        self._use_own(None)  # the old session's channels go with it
        if session is not None:
            self.parts.tasks.spawn(self._open_own(self.model), name=f"{self.label}: open {self.model}")

    def choose_model(self, name: str | None) -> None:
        """The tile's model choice: None is the session's model."""
        if name == self.model:
            return
        self.model = name
        self._opening += 1
        if name is None:
            self._use_own(None)
            self.controller.set_session(self._base)
            return
        self.controller.forget_results()  # no box of the old model stays drawn
        if self._base is not None:
            self.parts.tasks.spawn(self._open_own(name), name=f"{self.label}: open {name}")

    async def _open_own(self, model: str) -> None:
        base, ticket = self._base, self._opening
        if base is None:
            return
        spec = sharing_spec(base, model, self.parts.profile_for(model))
        loop = asyncio.get_running_loop()
        try:
            session = await loop.run_in_executor(self.parts.executor, open_session, spec)
        except Exception as e:
            if ticket == self._opening and not self.closed:
                self.tile.show_message(f"model {model}: {e}", error=True)
            return
        if ticket != self._opening or self.closed or base is not self._base:
            await loop.run_in_executor(self.parts.executor, session.close, SESSION_CLOSE_DRAIN_S)
            return  # another choice (or the end) came meanwhile
        self._use_own(session)

    def _use_own(self, session: TritonSession | None) -> None:
        """Feed `session` (a session of this stream's own), closing the one it replaces."""
        old, self.own_session = self.own_session, session
        if session is not None:
            self.controller.set_session(session)
        elif old is not None:
            self.controller.set_session(None)
        if old is not None:
            # Off the GUI thread: close() waits (briefly) for what is in flight.
            self.parts.executor.submit(old.close, SESSION_CLOSE_DRAIN_S)

    async def shutdown(self) -> None:
        """Stop the stream, release its capture, close its own session (if any)."""
        self.closed = True
        self._opening += 1
        await self.controller.shutdown()
        old, self.own_session = self.own_session, None
        if old is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self.parts.executor, old.close, SESSION_CLOSE_DRAIN_S)
        self.tracking.detach()
        if self.zones is not None:
            self.zones.detach()
