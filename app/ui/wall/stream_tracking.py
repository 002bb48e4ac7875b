"""Track ids for one stream of the wall: its own tracker (ids of one stream never mix with
another's), the trails drawn over whichever view shows the stream (its tile, or the single
view while it has the focus). Runs on the GUI thread as results are received, like the single
view's tracking (app/ui/live/live_tracking.py); the tracking library is imported once, on the
executor, by that one (`library()`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from app.inference.result import InferenceResult
from app.pipeline.live import LiveState
from app.pipeline.tracking import ObjectTracker, Track
from app.ui.live.live_controller import LiveController
from app.ui.view.image_view import ImageView
from app.ui.view.trail_item import TrailsItem


class StreamTracking:
    def __init__(self, live: LiveController, library: Callable[[], Future[None] | None]) -> None:
        self.live = live
        self._library = library
        self.enabled = False
        self.tracker: ObjectTracker | None = None
        self._state = LiveState.IDLE
        self.trails = TrailsItem()
        self.trails.setVisible(False)
        self._view: ImageView | None = None
        live.painted.connect(self._painted)
        live.state_changed.connect(self._state_changed)

    def attach(self, view: ImageView) -> None:
        """The trails go where the stream is drawn."""
        if self._view is view:
            return
        if self._view is not None:
            self._view.scene().removeItem(self.trails)
        view.scene().addItem(self.trails)
        self.trails.set_view_scale(view.zoom_factor())
        self._view = view

    def detach(self) -> None:
        if self._view is not None:
            self._view.scene().removeItem(self.trails)
            self._view = None

    def set_enabled(self, on: bool) -> None:
        """Track from the next frame on (a new tracker: ids start at 1), or stop tracking."""
        self.enabled = on
        self.tracker = None
        self.live.result_hook = self._track if on else None
        self.live.trails_hook = self._live_tracks if on else None
        self.trails.set_tracks([])
        self.trails.setVisible(on)
        if on:
            self._library()  # its import starts now, on the executor (once for every view)

    def _track(self, result: InferenceResult) -> InferenceResult:
        library = self._library()
        if library is None or not library.done() or library.exception() is not None:
            return result  # still importing (never on this thread), or unavailable (logged there)
        if self.tracker is None:
            self.tracker = ObjectTracker()
        return self.tracker.track(result)

    def _state_changed(self, state: LiveState, _detail: str) -> None:
        # A (re)start, not a resume: frame indices start again at 0, so do the tracks.
        if state is LiveState.PLAYING and self._state is not LiveState.PAUSED:
            self.tracker = None
            self.trails.set_tracks([])
        self._state = state

    def _live_tracks(self) -> list[Track]:
        return self.tracker.book.live() if self.tracker is not None else []

    def _painted(self, _result: InferenceResult) -> None:
        if self.enabled and self.tracker is not None:
            self.trails.set_tracks(self.tracker.book.live())
