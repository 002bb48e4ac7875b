"""--screenshot: once everything opened has its results (or after the first annotated frames
of --camera), a PNG of the window; the exit status says whether it all worked, and a failure
is repeated on stderr for scripted runs (the window showed it in the banner).

Nothing is polled: every signal or state event after which `ready()` can have become true
wakes the wait, which looks again.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from PySide6.QtGui import QImageWriter
from PySide6.QtWidgets import QWidget

from app.pipeline.connection.state import ConnectionState
from app.ui.batch.batch_runner import BatchRunner
from app.ui.batch.gallery import Gallery
from app.ui.live.live_controller import LiveController
from app.ui.server.connection import ConnectionController

SETTLE_S = 0.5  # two statistics ticks: the figures and the log catch up with the last results


class Screenshot:
    def __init__(
        self,
        window: QWidget,
        connection: ConnectionController,
        runner: BatchRunner,
        gallery: Gallery,
        live: LiveController,
        camera: bool,  # --camera: ready after the stream's first annotated frames
        pending: Callable[[], bool],  # inputs opened, waiting for a connection
        failure: Callable[[], tuple[str | None, list[str]]],  # the connection's: why, models there
    ) -> None:
        self.window, self.connection, self.runner = window, connection, runner
        self.gallery, self.live, self.camera = gallery, live, camera
        self._pending, self._failure = pending, failure
        # With --camera: whether the live view has shown enough (the wall's streams replace it).
        self.live_ready: Callable[[], bool] = live.screenshot_ready
        self.live_error: Callable[[], str | None] = lambda: live.error
        self._changed = asyncio.Event()  # set by every change that can make ready() true
        # `pending()` turns False when the session opens (the viewer runs what waited for it).
        for signal in (
            connection.state_changed,
            connection.session_opened,
            runner.finished,
            gallery.settled,
            live.state_changed,  # ended, failed (its error set)
            live.frame_shown,
            live.released,
        ):
            signal.connect(self._wake)
        for event in (gallery.state.batch_changed, gallery.state.shown_changed):
            event.connect(self._wake)

    def _wake(self, *_args: object) -> None:
        self._changed.set()

    def wake(self, *_args: object) -> None:
        """Something else `ready()` reads may have changed (e.g. the wall's figures)."""
        self._changed.set()

    def ready(self) -> bool:
        """Connected (or failed), everything opened has its result and the shown image is drawn."""
        if self.connection.state is ConnectionState.FAILED:
            return True
        if self.camera:
            return self.live_ready()
        state = self.gallery.state
        any_ok = any(r.ok for r in state.results.values())
        return (
            self.connection.state is ConnectionState.CONNECTED
            and not self._pending()
            and not self.runner.active()
            and not self.gallery.busy()
            and (not state.results or state.shown_key is not None or not any_ok)
        )

    async def take(self, path: str, settle: Callable[[], None], report: Callable[[str, bool], None]) -> int:
        """Wait until ready, `settle()` (flush what is shown), write the PNG; the exit status."""
        while True:
            self._changed.clear()  # before looking: a change from now on wakes the wait
            if self.ready():
                break
            await self._changed.wait()
        await asyncio.sleep(SETTLE_S)
        settle()
        writer = QImageWriter(path, b"png")
        if not writer.write(self.window.grab().toImage()):
            report(f"could not write the screenshot {path}: {writer.errorString()}", True)
            return 1
        live_error = self.live_error()
        if self.connection.state is ConnectionState.FAILED or live_error is not None:
            why, models = self._failure()
            print(f"error: {why or live_error}", file=sys.stderr, flush=True)
            if models:
                print(f"models on the server: {', '.join(models)}", file=sys.stderr, flush=True)
            return 1
        return 0
