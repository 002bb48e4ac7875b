"""Tracking in the live preview: track ids on the stream's detections, trails on the view and
the tracks panel. The tracker (app.pipeline.tracking) runs on the GUI thread as results are
received: a few hundred microseconds per frame, in frame order (older results are ignored).
Its library is imported on the executor when tracking is switched on (1.7 s the first time);
the frames shown meanwhile have no track ids yet."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, Future

from PySide6.QtCore import QObject, QTimer

from app.inference.result import InferenceResult
from app.pipeline.live import LiveState
from app.pipeline.tracking import ObjectTracker, Track, load_tracker_library
from app.ui.live.live_controller import LiveController
from app.ui.live.tracks_panel import TracksPanel
from app.ui.view.image_view import ImageView
from app.ui.view.trail_item import TrailsItem

log = logging.getLogger(__name__)

PANEL_INTERVAL_MS = 500


class LiveTracking(QObject):
    def __init__(self, live: LiveController, view: ImageView, panel: TracksPanel, executor: Executor) -> None:
        super().__init__()
        self.live, self.view, self.panel = live, view, panel
        self._executor = executor
        self.library: Future[None] | None = None  # the tracking library's import, once
        self.enabled = False
        self.tracker: ObjectTracker | None = None
        self._source: str | None = None
        self._state = LiveState.IDLE
        # Whose tracks the panel lists when not the single stream's (a wall stream focused).
        self.panel_tracker: Callable[[], ObjectTracker | None] | None = None
        self.trails = TrailsItem()
        self.trails.setVisible(False)
        view.scene().addItem(self.trails)
        live.painted.connect(self._painted)
        live.state_changed.connect(self._state_changed)
        self._panel_timer = QTimer(self)
        self._panel_timer.setInterval(PANEL_INTERVAL_MS)
        self._panel_timer.timeout.connect(self.refresh_panel)
        panel.flicker_frames.valueChanged.connect(lambda _v: self.refresh_panel())

    def set_enabled(self, on: bool) -> None:
        """Track from the next frame on (a new tracker: ids start at 1), or stop tracking."""
        self.enabled = on
        self.tracker, self._source = None, None
        self.live.result_hook = self._track if on else None
        self.live.trails_hook = self._live_tracks if on else None
        self.trails.set_tracks([])
        self.trails.setVisible(on)
        if on:
            self.load_library()
            self.panel.clear("Tracking: waiting for the live stream's frames")
            self._panel_timer.start()
        else:
            self._panel_timer.stop()
            self.panel.clear()

    def load_library(self) -> Future[None]:
        """The tracking library's import on the executor, started once (a wall tile tracked
        alone asks for it too)."""
        if self.library is None:
            self.library = self._executor.submit(load_tracker_library)
            self.library.add_done_callback(self._library_loaded)
        return self.library

    def reset(self) -> None:
        """The stream the tracks belong to is no longer shown (the batch took the view, the list
        was cleared, another model or source): no trail stays drawn, ids start again at 1."""
        self.tracker, self._source = None, None
        self.trails.set_tracks([])
        if self.enabled:
            self.panel.clear("Tracking: waiting for the live stream's frames")

    def _state_changed(self, state: LiveState, _detail: str) -> None:
        # A (re)start, not a resume: frame indices start again at 0, so do the tracks (and the
        # last stream's trails are not drawn over the new one's first frames).
        if state is LiveState.PLAYING and self._state is not LiveState.PAUSED:
            self.reset()
        self._state = state

    def _track(self, result: InferenceResult) -> InferenceResult:
        library = self.library
        if library is None or not library.done():
            return result  # still importing (never on this thread): no ids on this frame
        if library.exception() is not None:
            return result  # logged once below; the stream goes on untracked
        if self.tracker is None or result.source != self._source:
            self.tracker = ObjectTracker()
            self._source = result.source
        return self.tracker.track(result)

    def _library_loaded(self, library: Future[None]) -> None:
        error = library.exception()
        if error is not None:
            log.error("tracking is unavailable: %s", error)

    def _live_tracks(self) -> list[Track]:
        """The tracks whose trails are drawn over the frame just tracked (the recording's too)."""
        return self.tracker.book.live() if self.tracker is not None else []

    def _painted(self, _result: InferenceResult) -> None:
        if self.enabled and self.tracker is not None:
            self.trails.set_tracks(self.tracker.book.live())

    def refresh_panel(self) -> None:
        tracker = self.panel_tracker() if self.panel_tracker is not None else self.tracker
        if tracker is None:
            return
        book = tracker.book
        live_ids = {t.track_id for t in book.live()}
        self.panel.set_tracks(
            list(book.tracks.values()), live_ids, book.flicker(self.panel.flicker_frames.value())
        )
