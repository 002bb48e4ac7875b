"""WallController: the wall of streams. It adds and removes streams (each a `WallStream`: a
LiveController of its own in a tile), lays their tiles out, refreshes their figures, gives
one the focus (drawn in the single live view, whose panels then show it) and takes it back,
and stops them all when the window closes.

The wall is the live view's page while it has streams: the batch taking the view back, or a
single stream opened from Live > Open…, closes it (one live view at a time, as a batch and
a stream already do). Every stream runs on its own: one that fails or ends shows it in its
tile and the others play on. All of it runs on the GUI thread; the streams' threads are the
capture threads and the session's, as for the single view.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QStackedWidget

from app.inference.core.session import TritonSession
from app.inference.result import InferenceResult
from app.pipeline.live import LiveOptions, LiveState
from app.pipeline.wall_figures import WallFigures, combined_display, combined_stream
from app.sources.cameras import parse_source
from app.ui.live.live_rows import show_live_rows
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.view.image_view import ImageView
from app.ui.wall.wall_stream import WallParts, WallStream
from app.ui.wall.wall_widget import WallWidget

log = logging.getLogger(__name__)

FIGURES_INTERVAL_MS = 500
PLAYING = (LiveState.PLAYING, LiveState.PAUSED, LiveState.WAITING)


class WallController(QObject):
    focus_changed = Signal(object)  # the focused WallStream, or None: the wall shows
    streams_changed = Signal()  # a stream was added or removed
    refreshed = Signal()  # the figures were read again (every FIGURES_INTERVAL_MS)
    started = Signal()  # the wall's first stream was added (its statistics start)

    def __init__(
        self,
        pages: QStackedWidget,
        single_view: ImageView,
        state: ViewerState,
        parts: WallParts,
        options: Callable[[], LiveOptions],
        take_view: Callable[[], None],
        give_back_view: Callable[[], None],
        report: Callable[[str, bool], None],
        results: Callable[[InferenceResult], None],
    ) -> None:
        """`pages`: the window's middle (the wall is one of its pages, `single_view` another);
        `options()`: the options new streams start with (the Live toolbar's);
        `take_view()`: the live view takes the window's middle (the wall is its page);
        `give_back_view()`: the wall's last stream went, the batch (or nothing) shows again;
        `results(result)`: every stream's results (the request log and the live statistics)."""
        super().__init__()
        self.pages, self.state, self.parts = pages, state, parts
        self._options, self._take_view, self._give_back_view = options, take_view, give_back_view
        self._report, self._results = report, results
        self.single_view = single_view
        self.widget = WallWidget()
        pages.addWidget(self.widget)
        self.streams: list[WallStream] = []
        self.focused: WallStream | None = None
        self.session: TritonSession | None = None
        self._closing: set[WallStream] = set()
        self._timer = QTimer(self)
        self._timer.setInterval(FIGURES_INTERVAL_MS)
        self._timer.timeout.connect(self.refresh)
        state.mode_changed.connect(self._mode_changed)

    @property
    def active(self) -> bool:
        """The wall has streams (it is the live view's page)."""
        return bool(self.streams)

    # -- adding and removing ----------------------------------------------------------------------
    def add_text(self, text: str) -> WallStream | None:
        """A camera index, a video file or a stream URL as typed; None (and a message) if not one."""
        try:
            source = parse_source(text)
        except ValueError as e:
            self._report(f"cannot open {text!r}: {e}", True)
            return None
        return self.add(source)

    def add(self, source: int | str) -> WallStream:
        """A new tile playing `source` (once a session is there)."""
        stream = WallStream(source, self.parts, self._options())
        stream.tile.focus_requested.connect(lambda: self.focus(stream))
        stream.controller.result.connect(self._results)
        self.streams.append(stream)
        self._relayout()
        self.show()
        if len(self.streams) == 1:
            self.started.emit()
        stream.set_session(self.session)
        stream.start()
        self._timer.start()
        self.streams_changed.emit()
        return stream

    def remove(self, stream: WallStream) -> None:
        """Stop `stream` and take its tile away (the others play on)."""
        if stream not in self.streams:
            return
        if self.focused is stream:
            self.unfocus()
        self.streams.remove(stream)
        self._closing.add(stream)
        self.parts.tasks.spawn(self._close(stream), name=f"close {stream.label}")
        self._relayout()
        self.streams_changed.emit()
        if not self.streams:
            self._timer.stop()
            self._give_back_view()

    def close_all(self) -> None:
        """Every stream stops and the wall goes (the batch or a single stream took the view)."""
        if self.focused is not None:
            self.unfocus()
        streams, self.streams = self.streams, []
        for stream in streams:
            self._closing.add(stream)
            self.parts.tasks.spawn(self._close(stream), name=f"close {stream.label}")
        self._timer.stop()
        self._relayout()
        if self.state.mode is Mode.LIVE:
            self.pages.setCurrentWidget(self.single_view)  # (a single stream takes the view)
        if streams:
            self.streams_changed.emit()

    async def _close(self, stream: WallStream) -> None:
        try:
            await stream.shutdown()
        finally:
            self._closing.discard(stream)
            stream.tile.hide()
            stream.tile.deleteLater()

    def _relayout(self) -> None:
        self.widget.set_tiles([s.tile for s in self.streams])

    # -- what the middle of the window shows ---------------------------------------------------------
    def show(self) -> None:
        """The wall as the live view's page (the window's mode is live)."""
        if self.state.mode is not Mode.LIVE:
            self._take_view()  # the mode becomes live: _mode_changed shows the wall
        self._show_page()

    def _show_page(self) -> None:
        if self.streams:
            page = self.single_view if self.focused is not None else self.widget
            self.pages.setCurrentWidget(page)

    def _mode_changed(self, mode: Mode) -> None:
        if mode is Mode.LIVE:
            self._show_page()
        elif self.streams:
            self.close_all()  # the batch (or nothing) shows: the streams stop

    def focus(self, stream: WallStream) -> None:
        """`stream` in the single live view (its panels follow it); the others play on, decoded
        only as big as their model needs while their tiles are hidden."""
        if stream not in self.streams or self.focused is stream:
            return
        if self.focused is not None:
            self.unfocus()
        self.focused = stream
        for other in self.streams:
            if other is not stream:
                other.controller.set_hidden(True)  # its tile is hidden: not drawn, model-sized
        stream.attach(self.single_view)
        self.pages.setCurrentWidget(self.single_view)
        self.single_view.setFocus()
        self.focus_changed.emit(stream)

    def unfocus(self) -> None:
        """Back to the wall (Esc)."""
        stream, self.focused = self.focused, None
        if stream is None:
            return
        stream.attach(stream.tile.view)
        self.single_view.clear()  # nothing of the stream stays in the single view
        for each in self.streams:
            each.controller.set_hidden(False)  # drawn (and decoded) for its tile again
        self._show_page()
        self.focus_changed.emit(None)

    # -- sessions, figures, the end -------------------------------------------------------------------
    def set_session(self, session: TritonSession | None) -> None:
        self.session = session
        for stream in self.streams:
            stream.set_session(session)

    def refresh(self) -> None:
        """Each tile's figures and the wall's overall line."""
        figures = []
        for stream in self.streams:
            f = stream.figures()
            figures.append(f)
            stream.tile.set_figures(f.text())
        playing = sum(1 for s in self.streams if s.state in PLAYING)
        self.widget.summary.setText(WallFigures.of(figures, playing).text())
        self.refreshed.emit()

    def first_error(self) -> str | None:
        """The first failed stream's error (None: none failed)."""
        return next((s.controller.error for s in self.streams if s.controller.error), None)

    def screenshot_ready(self) -> bool:
        """--screenshot: every stream has shown its first annotated frames, failed or ended."""
        return bool(self.streams) and all(s.controller.screenshot_ready() for s in self.streams)

    def figures(self) -> WallFigures:
        playing = sum(1 for s in self.streams if s.state in PLAYING)
        return WallFigures.of([s.figures() for s in self.streams], playing)

    def update_stats_panel(self, single: Callable[[], None]) -> None:
        """The Statistics panel's live rows: the focused stream's, the whole wall's (added up),
        else the single view's."""
        if self.focused is not None:
            self.focused.controller.update_stats_panel()
        elif self.streams:
            controllers = [s.controller for s in self.streams]
            display = combined_display([c.display_stats() for c in controllers])
            stream = combined_stream([c.stream_stats() for c in controllers])
            capture = sum(c.live.stats().capture.fps for c in controllers if c.live is not None)
            show_live_rows(self.parts.stats_panel, display, stream, capture)
        else:
            single()

    @property
    def closing(self) -> int:
        """Streams removed whose capture is still being released."""
        return len(self._closing)

    async def shutdown(self) -> None:
        """The window closes: every stream stops at once (in parallel), within the bound of one."""
        self._timer.stop()
        self.focused = None
        streams, self.streams = self.streams, []
        results = await asyncio.gather(*(s.shutdown() for s in streams), return_exceptions=True)
        for stream, outcome in zip(streams, results, strict=True):
            if isinstance(outcome, BaseException):
                log.error("%s: error while stopping", stream.label, exc_info=outcome)
