"""StatsController: counts every result in its scope, shows the chosen scope in the panel and
the chart (each scope keeps its own last minute), resets a scope when asked or when a new
batch or stream starts (the panel says since when)."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts
from app.ui.analysis.scoped_stats import Scope, ScopedStats, ScopeSnapshot
from app.ui.analysis.stats_panel import StatsPanel, one_line
from app.ui.state.viewer_state import ViewerState
from app.ui.widgets.live_plot import WINDOW_S, LivePlot, PlotPoint

POLL_MS = 250  # ~4 Hz


class StatsController(QObject):
    def __init__(
        self,
        state: ViewerState,
        panel: StatsPanel,
        plot: LivePlot,
        in_flight: Callable[[], int],
        extra_rows: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        line: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.state, self.panel, self.plot = state, panel, plot
        self._line = line  # the shown scope's figures in one line (the status bar)
        self._in_flight = in_flight
        self._extra_rows = extra_rows  # the live stream's own rows (capture, display...)
        self._clock = clock
        self.stats = ScopedStats(clock)
        self._history: dict[Scope, collections.deque[PlotPoint]] = {s: collections.deque() for s in Scope}
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.poll)
        # The scope shown is the state's: the panel's selector writes it and mirrors it.
        panel.set_scope(state.scope)
        panel.scope_changed.connect(state.set_scope)
        state.scope_changed.connect(panel.set_scope)
        state.scope_changed.connect(lambda _s: self._show_history())
        panel.reset_requested.connect(lambda scope: self.reset(scope, "reset"))

    def start(self) -> None:
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    # -- feeding (GUI thread) ----------------------------------------------------------------
    def add(self, result: InferenceResult, scope: Scope) -> None:
        self.stats.add(result, scope)

    def batch_started(self) -> None:
        self.reset(Scope.BATCH, "batch started")
        self.state.set_scope(Scope.BATCH)

    def batch_finished(self, counts: BatchCounts) -> None:
        # Inputs a cancelled batch never sent: not results, but part of the batch's summary.
        self.stats.scopes[Scope.BATCH].set_not_started(counts.not_started)

    def live_started(self) -> None:
        self.reset(Scope.LIVE, "stream started")
        self.state.set_scope(Scope.LIVE)

    def reset(self, scope: Scope, note: str) -> None:
        self.stats.reset(scope, note)
        self._history[scope].clear()
        if scope is self.state.scope:
            self.plot.clear()
        self.poll()

    # -- showing -----------------------------------------------------------------------------
    def snapshot(self, scope: Scope) -> ScopeSnapshot:
        return self.stats.snapshot(scope)

    def snapshots(self) -> list[ScopeSnapshot]:
        return [self.stats.snapshot(s) for s in (Scope.BATCH, Scope.LIVE, Scope.SESSION)]

    def poll(self) -> None:
        now = self._clock()
        shown = self.state.scope
        for scope in Scope:
            snap = self.stats.snapshot(scope)
            history = self._history[scope]
            point = PlotPoint(now, snap.p50_ms, snap.requests_per_s)
            history.append(point)
            while history and history[0].t < now - WINDOW_S:
                history.popleft()
            if scope is shown:
                self.panel.show_snapshot(snap, self._in_flight())
                self.plot.add_point(*point)
                if self._line is not None:
                    self._line(one_line(snap))
        self._extra_rows()

    def _show_history(self) -> None:
        self.plot.clear()
        for point in self._history[self.state.scope]:
            self.plot.add_point(*point)
        self.panel.show_snapshot(self.stats.snapshot(self.state.scope), self._in_flight())
        self._extra_rows()
