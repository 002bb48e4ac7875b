"""A/B compare in the viewer: two sessions of its own (A and B), a batch compare for images
and folders and a live compare for videos, drawn in the compare window.

Threads: sessions open and close on the executor; batch results and live results come back
through the bridge bound to the run that made them (a stopped run's late results are
dropped); pairing of live frames (`LivePairer`), the tally and all drawing happen on the
GUI thread. A live frame is drawn when both results are in, or after the pairer's deadline
with the missing side marked; the newest pair wins, frames never go back in time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from superqt.utils import QSignalThrottler

from app.inference.core.open_session import open_session
from app.inference.core.session import TritonSession
from app.inference.core.spec import ProfileSource, SessionSpec
from app.inference.protocol import UrlError, parse_endpoints
from app.inference.result import InferenceResult
from app.pipeline.batch import BatchCounts, VideoPolicy
from app.pipeline.compare import CompareBatch, ComparedInput, CompareTally, Disagreement, Key, Side, key_of
from app.pipeline.compare_live import CompareLiveRun, LivePair, LivePairer
from app.pipeline.display import DisplayMeter
from app.pipeline.live import LiveEvent, LiveOptions
from app.pipeline.matching import match_results
from app.sources.files import sniff_kind
from app.sources.frame import Frame
from app.sources.images import read_image
from app.ui.base.bridge import GuiBridge
from app.ui.base.tasks import TaskSet
from app.ui.compare.compare_view import Layout
from app.ui.compare.compare_window import CompareChoice, CompareWindow

log = logging.getLogger(__name__)

EXPIRE_INTERVAL_MS = 20  # how often late live pairs are looked for
FIGURES_INTERVAL_MS = 500


class CompareController(QObject):
    pair_shown = Signal(int, float)  # live: frame index, capture-to-display latency (ms)
    ready = Signal()  # both sessions are open
    batch_done = Signal()  # a batch compare ended: every input's pair is in `pairs`

    def __init__(
        self,
        executor: Executor,
        tasks: TaskSet,
        bridge: GuiBridge,
        report: Callable[[str, bool], None],
        clear_errors: Callable[[], None] = lambda: None,
    ) -> None:
        """`report` shows the compare's errors as its own (the banner's compare context);
        `clear_errors` removes them: when the window closes and when a new run starts, so an
        error never outlives the window or the run that raised it."""
        super().__init__()
        self._executor, self._tasks, self._bridge, self._report = executor, tasks, bridge, report
        self._clear_errors = clear_errors
        self.window = CompareWindow()
        self.sessions: dict[Side, TritonSession] = {}
        self.choice: CompareChoice | None = None
        self.batch: CompareBatch | None = None
        self.live: CompareLiveRun | None = None
        self.live_options = LiveOptions()
        self.tally = CompareTally()
        self.pairs: dict[Key, ComparedInput] = {}
        self.pairer = LivePairer()
        self.meter = DisplayMeter()
        self.shown_key: Key | None = None
        self._selected: Key | None = None  # chosen in the table: new results no longer take the view
        self._run = 0
        self._pending: LivePair | None = None
        self._shown_index = -1
        self._loading: Key | None = None
        w = self.window
        w.paths_opened.connect(self.open_paths)
        w.video_opened.connect(self.open_video)
        w.stop_requested.connect(self.stop)
        w.closed.connect(self.stop)
        w.closed.connect(self._clear_errors)
        w.iou.valueChanged.connect(self.set_iou)
        w.panel.open_requested.connect(self._open_requested)
        self._expire_timer = repeating(self, EXPIRE_INTERVAL_MS, self._expire)
        self._figures_timer = repeating(self, FIGURES_INTERVAL_MS, self.update_figures)
        # At 0 ms, trailing: after the results already queued (a burst costs one paint).
        self._paint_pass = QSignalThrottler(QSignalThrottler.EmissionPolicy.Trailing, parent=self)
        self._paint_pass.setTimeout(0)
        self._paint_pass.triggered.connect(self._paint_live)

    @property
    def active(self) -> bool:
        return len(self.sessions) == 2

    # -- sessions ---------------------------------------------------------------------------------
    async def start(
        self, choice: CompareChoice, base: SessionSpec, profile_for: Callable[[str | None], ProfileSource]
    ) -> bool:
        """Open A and B (A on the servers of `base`, the viewer's session; B on
        `choice.urls_b` or the same) as `base` says (transport, client batching, TLS,
        headers, limits), each model with `profile_for(model)`, and show the window. False
        (and a message) when either cannot be opened."""
        await self.close_sessions()
        self._clear_errors()  # the errors of the previous pair of models
        loop = asyncio.get_running_loop()
        try:  # B's servers as typed in the compare window (none: A's)
            endpoints_b = parse_endpoints(choice.urls_b) if choice.urls_b else base.endpoints
        except UrlError as e:
            self._report(f"compare: server B: {e}", True)
            return False
        opened: dict[Side, TritonSession] = {}
        try:
            for side, endpoints, model, version in (
                (Side.A, base.endpoints, choice.model_a, choice.version_a),
                (Side.B, endpoints_b, choice.model_b, choice.version_b),
            ):
                spec = dataclasses.replace(
                    base,
                    endpoints=endpoints,
                    model=model or None,
                    version=version,
                    profile=profile_for(model or None),
                )
                try:
                    session = await loop.run_in_executor(self._executor, open_session, spec)
                except Exception as e:
                    self._report(f"compare: model {side.upper()}: {e}", True)
                    return False
                opened[side] = session
        finally:
            if len(opened) < 2:
                for session in opened.values():
                    await loop.run_in_executor(self._executor, functools.partial(session.close, 0.0))
        self.sessions, self.choice = opened, choice
        self.window.view.set_titles(self._describe(Side.A), self._describe(Side.B))
        self.window.setWindowTitle(f"A/B compare: {self._describe(Side.A)} vs {self._describe(Side.B)}")
        self.window.show()
        self.window.raise_()
        self._figures_timer.start()
        self.ready.emit()
        return True

    def _describe(self, side: Side) -> str:
        session = self.sessions[side]
        info = session.info
        version = session.spec.version or (info.version if info else "")
        name = info.name if info else "?"
        return f"{name}{f' v{version}' if version else ''} @ {', '.join(session.urls)}"

    async def close_sessions(self) -> None:
        await self._stop_runs()
        sessions, self.sessions = self.sessions, {}
        loop = asyncio.get_running_loop()
        for session in sessions.values():
            await loop.run_in_executor(self._executor, functools.partial(session.close, 0.2))

    async def shutdown(self) -> None:
        self._figures_timer.stop()
        await self.close_sessions()
        self.window.close()
        self.window.deleteLater()

    # -- inputs -------------------------------------------------------------------------------------
    def open_paths(self, paths: list[str]) -> None:
        if not self.active:
            self._report("compare: choose the two models first (Analyse > Compare with…)", True)
            return
        self._tasks.spawn(self._open_paths(paths), name="compare open")

    async def _open_paths(self, paths: list[str]) -> None:
        # Sniffing reads the files: not on the GUI thread.
        loop = asyncio.get_running_loop()
        kinds = await loop.run_in_executor(
            self._executor, lambda: [sniff_kind(Path(p), given=True)[0] for p in paths]
        )
        videos = [p for p, kind in zip(paths, kinds, strict=True) if kind == "video"]
        others = [p for p, kind in zip(paths, kinds, strict=True) if kind != "video"]
        if videos and not others:
            self.open_video(videos[0])
            return
        await self._stop_runs()
        self._start_batch(others or paths)

    def _start_batch(self, paths: list[str]) -> None:
        self._new_run()
        wrap = self._bridge.wrap
        run = self._run
        self.batch = CompareBatch(
            self.sessions[Side.A],
            self.sessions[Side.B],
            paths,
            wrap(functools.partial(self._on_pair, run)),
            iou_threshold=self.window.iou.value(),
            videos=VideoPolicy.REFUSE,
            on_started=wrap(functools.partial(self._on_batch_started, run)),
            on_finished=wrap(functools.partial(self._on_batch_finished, run)),
        )
        self.batch.start()

    def open_video(self, source: str) -> None:
        if not self.active:
            self._report("compare: choose the two models first (Analyse > Compare with…)", True)
            return
        self._tasks.spawn(self._start_live(source), name="compare live")

    async def _start_live(self, source: int | str) -> None:
        await self._stop_runs()
        self._new_run()
        run = self._run
        wrap = self._bridge.wrap
        self.pairer = LivePairer(iou_threshold=self.window.iou.value())
        self.meter = DisplayMeter()
        self.tally = CompareTally()
        self._shown_index = -1
        self.live = CompareLiveRun(
            source,
            self.sessions,
            on_result=wrap(functools.partial(self._on_live_result, run)),
            on_dropped=wrap(functools.partial(self._on_live_dropped, run)),
            on_event=wrap(functools.partial(self._on_live_event, run)),
            options=LiveOptions(**vars(self.live_options)),
            # Posted after both sides' last results: nothing more of this run will come.
            on_drained=wrap(functools.partial(self._on_live_drained, run)),
        )
        self.live.start()
        self._expire_timer.start()
        self._status(f"live: {Path(str(source)).name} → A and B")

    def stop(self) -> None:
        self._tasks.spawn(self._stop_runs(), name="compare stop")

    async def _stop_runs(self) -> None:
        self._run += 1  # from now on the old run's results are dropped
        self._expire_timer.stop()
        self._pending = None
        batch, self.batch = self.batch, None
        if batch is not None:
            batch.cancel()
            self.window.progress.hide()
        live, self.live = self.live, None
        if live is not None:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, functools.partial(live.stop, 2.0)
            )
        self.pairer.clear()

    def _new_run(self) -> None:
        self._clear_errors()
        self._run += 1
        self.tally = CompareTally()
        self.pairs.clear()
        self._selected = self.shown_key = None
        self.window.panel.clear_rows()
        self.window.view.clear()

    # -- batch results (GUI thread) ----------------------------------------------------------------
    def _on_pair(self, run: int, pair: ComparedInput) -> None:
        if run != self._run:
            return
        key = key_of(pair.a)
        self.pairs[key] = pair
        self.window.progress.setValue(len(self.pairs))
        row = self.tally.add(pair)
        if row is not None:
            self.window.panel.add_row(row)
        if not pair.ok and not pair.skipped:
            error = pair.a.error if not pair.a.ok else pair.b.error
            self._report(f"compare: {error}", True)
        if self._selected is None and pair.ok:
            self._show_key(key)

    def _on_batch_started(self, run: int, total: int) -> None:
        if run != self._run:
            return
        self._status(f"comparing {total} input(s)…")
        bar = self.window.progress
        bar.setRange(0, max(total, 1))
        bar.setValue(0)
        bar.show()

    def _on_batch_finished(self, run: int, a: BatchCounts, b: BatchCounts) -> None:
        if run != self._run:
            return
        self.window.progress.hide()
        self.update_figures()
        self.window.panel.sort_by_disagreement()
        s = self.tally.summary()
        self._status(
            f"done: {s['total']} input(s), agreement {s['agreement']:.3f} "
            f"({s['matched']} matched, {s['only_a']} only A, {s['only_b']} only B)"
        )
        self.batch_done.emit()

    def _open_requested(self, source: str | None, frame: int | None) -> None:
        key = (source, frame)
        if key in self.pairs:
            self._selected = key
            self._show_key(key)

    def _show_key(self, key: Key) -> None:
        source = key[0]
        if source is None or self._loading == key:
            return
        self._loading = key
        self._tasks.spawn(self._load_and_show(key, source), name="compare show")

    async def _load_and_show(self, key: Key, source: str) -> None:
        try:
            image = await asyncio.get_running_loop().run_in_executor(self._executor, read_image, source)
        except Exception as e:
            self._report(f"compare: {e}", True)
            return
        finally:
            if self._loading == key:
                self._loading = None
        pair = self.pairs.get(key)
        if pair is not None:
            self._draw(image, pair.a, pair.b, pair.match, "")
            self.shown_key = key

    # -- live results (GUI thread) -------------------------------------------------------------------
    def _on_live_result(self, run: int, side: Side, result: InferenceResult) -> None:
        if run != self._run:
            return
        if side is Side.A:
            self.meter.result()
        self.tally.add_result(side, result)  # each model's own figures, paired or not
        if not result.ok:
            self._report(
                f"compare {side.upper()}: {result.source} frame {result.frame}: {result.error}", True
            )
        self._offer(self.pairer.result(side, result, _now()))

    def _on_live_dropped(self, run: int, side: Side, frame: Frame) -> None:
        if run == self._run:
            self._offer(self.pairer.dropped(side, frame, _now()))

    def _on_live_event(self, run: int, event: LiveEvent, message: str) -> None:
        if run != self._run:
            return
        if event is LiveEvent.ERROR:
            self._report(f"compare: {message}", True)
        else:
            self._status("live: end of the file")

    def _on_live_drained(self, run: int) -> None:
        if run == self._run:
            self._tasks.spawn(self._finish_live(run), name="compare live end")

    async def _finish_live(self, run: int) -> None:
        # Every result of the run is in: draw the pairs still waiting for a side that will
        # never answer, then release the capture.
        if run == self._run:
            for pair in self.pairer.flush():
                self._offer(pair)
            live, self.live = self.live, None
            if live is not None:
                await asyncio.get_running_loop().run_in_executor(
                    self._executor, functools.partial(live.stop, 2.0)
                )
            self._expire_timer.stop()
            self.update_figures()

    def _expire(self) -> None:
        for pair in self.pairer.expire(_now()):
            self._offer(pair)

    def _offer(self, pair: LivePair | None) -> None:
        if pair is None or pair.index <= self._shown_index:
            return  # never step back in time
        if pair.a is not None and pair.b is not None:
            self.tally.add_match(ComparedInput(pair.a, pair.b, pair.match))
        if self._pending is None or pair.index > self._pending.index:
            self._pending = pair
        self._paint_pass.throttle()

    def _paint_live(self) -> None:
        pair, self._pending = self._pending, None
        if pair is None or pair.index <= self._shown_index:
            return
        self._shown_index = pair.index
        self.pairer.forget_before(pair.index)
        marker = ""
        if pair.missing is not None:
            dropped = pair.missing is not None and pair.result(pair.missing) is None
            marker = f"{pair.missing.upper()} {'late or dropped' if dropped else 'missing'} on this frame"
        self._draw(pair.frame.image, pair.a, pair.b, pair.match, marker)
        age_ms = self.meter.drawn(pair.frame.timestamp)
        self.pair_shown.emit(pair.index, age_ms)

    # -- drawing and figures --------------------------------------------------------------------------
    def _draw(
        self,
        image: np.ndarray,
        a: InferenceResult | None,
        b: InferenceResult | None,
        match: object,
        marker: str,
    ) -> None:
        if a is not None and b is not None and not (a.ok and b.ok):
            failed = a if not a.ok else b
            marker = marker or f"{'A' if failed is a else 'B'} failed: {failed.error}"
        self.window.view.show_pair(image, a, b, match, marker)  # type: ignore[arg-type]

    def set_iou(self, value: float) -> None:
        """Re-match what was received with the new threshold (no new request)."""
        self.pairer.iou_threshold = value
        if self.batch is not None:
            self.batch.pairer.iou_threshold = value
        if not self.pairs:  # live: the frames from now on are matched with the new threshold
            return
        self.window.panel.clear_rows()
        self.tally, rows = rematched(self.pairs, value, self.tally.started)
        for row in rows:
            self.window.panel.add_row(row)
        self.update_figures()
        if self.shown_key is not None and self.shown_key in self.pairs:
            self._show_key(self.shown_key)

    def update_figures(self) -> None:
        if not self.active:
            return
        summary = self.tally.summary()
        dropped: dict[Side, str] = {}
        if self.live is not None:
            for side, s in self.live.stream_stats().items():
                pct = 100.0 * s.dropped / s.offered if s.offered else 0.0
                dropped[side] = f"{s.dropped} ({pct:.0f}%)"
        for side in Side:
            info = self.sessions[side].info
            summary[side.value]["model"] = self._describe(side) if info else "?"
        self.window.panel.set_figures(summary, dropped)

    def set_layout(self, mode: Layout) -> None:
        self.window.set_layout(mode)

    def _status(self, text: str) -> None:
        self.window.statusBar().showMessage(text)


def _now() -> float:
    return time.monotonic()


def rematched(
    pairs: dict[Key, ComparedInput], iou: float, started: float | None
) -> tuple[CompareTally, list[Disagreement]]:
    """Every pair matched again at `iou` (replaced in `pairs`): the new tally and its rows."""
    tally, rows = CompareTally(started), list[Disagreement]()
    for key, pair in list(pairs.items()):
        pairs[key] = again = ComparedInput(pair.a, pair.b, match_results(pair.a, pair.b, iou))
        row = tally.add(again)
        if row is not None:
            rows.append(row)
    return tally, rows


def repeating(parent: QObject, interval_ms: int, slot: Callable[[], None]) -> QTimer:
    """A timer (not started) that calls `slot` every `interval_ms`."""
    timer = QTimer(parent)
    timer.setInterval(interval_ms)
    timer.timeout.connect(slot)
    return timer
