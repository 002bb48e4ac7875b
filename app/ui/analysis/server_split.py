"""The "where the time goes" bar: the client's share from the session's counters (cheap, ~4
times a second) and the server's from Triton's statistics, read every 2 s on the executor (a
network call each, never on the GUI thread)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Executor

from PySide6.QtCore import QObject, QTimer

from app.inference.core.session import TritonSession
from app.inference.errors import ExtensionMissingError
from app.inference.introspection.server_stats import ServerCounters, ServerSplit, split
from app.pipeline.time_split import Segment, time_segments
from app.ui.analysis.time_split import TimeSplitWidget
from app.ui.base.tasks import TaskSet

INTERVAL_MS = 250  # ~4 Hz
SERVER_EVERY = 8  # the server's statistics every 8 ticks (2 s)
WINDOW_S = 10.0  # the session statistics' rolling window (RequestStats' default)


class ServerSplitPoller(QObject):
    def __init__(
        self,
        widget: TimeSplitWidget,
        session: Callable[[], TritonSession | None],  # the viewer's current session
        executor: Executor,
        tasks: TaskSet,
    ) -> None:
        super().__init__()
        self.widget = widget
        self._session, self._executor, self._tasks = session, executor, tasks
        self.counters: ServerCounters | None = None
        self._read_at = 0.0  # time.monotonic() of `counters`: executions per second need it
        self.split: ServerSplit | None = None  # the server's share of the last interval with requests
        self._ticks = 0
        self._reading = False
        # The server has no statistics (not Triton): the bar shows the client's side and says so.
        self.unavailable = ""
        # The split of the last requests and when it was last seen (monotonic): kept on show
        # once the statistics' window holds none (idle), rather than "no request yet".
        self._last: list[Segment] = []
        self._last_at = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(self.poll)

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def session_opened(self, session: TritonSession) -> None:
        """A first read now: the next one (2 s on) gives the split of whatever ran in between."""
        self.counters, self.split, self.unavailable = None, None, ""
        self._last = []
        self.widget.set_batcher(None)
        self.widget.set_stages("", None)
        self._read(session)

    def poll(self) -> None:
        session = self._session()
        if session is None:
            return
        snap = session.stats.snapshot()  # cheap: counters under one lock
        segments = time_segments(snap.timing, self.split)
        now = time.monotonic()
        if segments:
            self._last, self._last_at = segments, now
            self.widget.set_segments(segments, self.unavailable)
        elif self._last:
            ago = now - self._last_at + WINDOW_S
            idle = f"Idle for {ago:.0f} s: the split of the last requests."
            self.widget.set_segments(self._last, " ".join(filter(None, (idle, self.unavailable))))
        elif snap.completed:
            self.widget.set_segments([], f"No successful request in the last {WINDOW_S:.0f} s.")
        else:
            self.widget.set_segments([], self.unavailable)
        self._ticks += 1
        if self._ticks % SERVER_EVERY == 0 and not self._reading and not self.unavailable:
            self._read(session)

    def _read(self, session: TritonSession) -> None:
        self._reading = True
        self._tasks.spawn(self._read_split(session), name="server statistics")

    async def _read_split(self, session: TritonSession) -> None:
        """Triton's statistics -> the server's share of the last interval. Kept until a newer
        interval has requests."""
        try:
            counters = await asyncio.get_running_loop().run_in_executor(
                self._executor, session.read_server_counters
            )
            read_at = time.monotonic()
        except ExtensionMissingError as e:
            counters = None
            if session is self._session():
                self.unavailable = str(e)  # "server statistics not available from this server"
        except Exception:
            counters = None  # statistics that failed this time: the bar shows the round trip whole
        finally:
            self._reading = False
        if session is not self._session() or counters is None:
            return
        if self.counters is not None:
            latest = split(self.counters, counters, read_at - self._read_at)
            if latest is not None:
                self.split = latest
                self.widget.set_batcher(latest)
                self.widget.set_stages(session.info.name if session.info else "", latest)
        self.counters, self._read_at = counters, read_at
