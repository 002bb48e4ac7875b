"""ViewerShutdown: the viewer's clean exit, from the window's close, File > Quit, SIGINT/SIGTERM
or --screenshot. The layout is saved and the window hidden at once; then each step runs on its
own (a step that fails is logged and never skips the ones after it: the batch is always
cancelled and the connection always closed), and the window closes."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence

from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.main_window import MainWindow

log = logging.getLogger(__name__)

Step = tuple[str, Callable[[], object]]  # a name for the log, and a call (maybe a coroutine's)


class ViewerShutdown:
    def __init__(
        self, window: MainWindow, settings: ViewerSettings, tasks: TaskSet, steps: Sequence[Step]
    ) -> None:
        """`steps`, in order: what to stop or close (each may return an awaitable)."""
        self.window, self.settings, self.tasks = window, settings, tasks
        self._steps = list(steps)
        self.closing = False  # from the request on: nothing more is reported to the window
        self.closed = asyncio.Event()  # every step ran and the window is closed

    def request(self) -> None:
        """Idempotent: a second request while closing does nothing."""
        if self.closing:
            return
        self.closing = True
        # The layout as the user left it (floating docks included), before anything is hidden.
        self.settings.set_window_state(self.window.saveGeometry(), self.window.save_layout())
        self.window.hide_all()
        self.tasks.spawn(self._run(), name="shutdown")

    async def _run(self) -> None:
        try:
            for name, step in self._steps:
                try:
                    outcome = step()
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    log.exception("error while closing (%s)", name)
        finally:
            self.window.allow_close()
            self.window.close()
            self.closed.set()
