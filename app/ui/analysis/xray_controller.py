"""XRayController: the X-ray view (app/ui/analysis/xray_view.py) driven from an `XRay`
(app.pipeline.xray) over the viewer's current session.

What it traces is a mode: off, the next N requests (back to off once the N are taken), or
all of them (kept across a model switch: the new session is traced too). The session's
tracer is made only when tracing is first asked for (`TritonSession.start_tracing`, as the
command line's `--trace` does): a viewer that never traces never reads the server's trace
settings. What touches the server or the disk (attaching the tracer, arming it, polling the
trace files, writing an export) runs on one worker thread of its own, in the order asked,
and its answers come back through a GuiBridge: the GUI thread never waits on either.
"""

from __future__ import annotations

import concurrent.futures
import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.inference.core.session import TritonSession
from app.inference.tracing.chrome import write_chrome_trace
from app.inference.tracing.perf_analyzer import replay_command, write_input_data
from app.inference.tracing.spans import RequestTrace
from app.pipeline.xray import XRay
from app.ui.analysis.xray_view import SLOWEST_LISTED, XRayView
from app.ui.base.bridge import GuiBridge

POLL_MS = 200


class TraceMode(enum.StrEnum):
    OFF = "off"
    NEXT = "next"  # the next N requests
    ALL = "all"


def replay_of(session: TritonSession) -> dict[str, Any]:
    """How the session sends (what perf_analyzer's command line repeats)."""
    info = session.info
    endpoint = session.spec.endpoints[0]
    return {
        "model": info.name if info is not None else session.spec.model,
        "url": endpoint.address,
        "protocol": session.protocol.value,
        "batch": max(1, session.batching),
        "concurrency": session.spec.limits.max_in_flight,
        "version": session.spec.version,
        "batched": info.max_batch_size > 0 if info is not None else True,
        "types": {str(t.get("name")): str(t.get("datatype")) for t in info.inputs} if info else {},
    }


class XRayController(QObject):
    """`view` shown from `xray`; `ask_path(request_id)` / `ask_chrome_path(count)` ask the user
    where to export (file dialogs in the viewer; None: cancelled); `report(message, error)`
    says what was written or why not."""

    mode_changed = Signal(str)  # TraceMode: the menu follows

    def __init__(
        self,
        view: XRayView,
        xray: XRay,
        *,
        ask_path: Callable[[str], str | None] | None = None,
        ask_chrome_path: Callable[[int], str | None] | None = None,
        report: Callable[[str, bool], None] | None = None,
        replay: dict[str, Any] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.view = view
        self.xray = xray
        self.ask_path = ask_path
        self.ask_chrome_path = ask_chrome_path
        self.report = report
        self.replay = dict(replay or {})  # model, url, protocol, batch, concurrency, version, batched
        self.session: TritonSession | None = None
        self.mode = TraceMode.OFF
        self.followed: str | None = None  # the newest traced live frame on the screen
        self.bridge = GuiBridge(self)
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "x-ray")
        self._attached: TritonSession | None = None  # (the worker's: attached there only)
        self._polling = False
        self._closed = False
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self._poll)
        view.trace_next_requested.connect(self.trace_next)
        view.export_requested.connect(self._export_asked)
        view.chrome_requested.connect(self._chrome_asked)
        view.request_chosen.connect(self.choose)
        self.timer.start()

    # -- the session and what is traced (GUI thread) ------------------------------------
    def attach_now(self, session: TritonSession) -> concurrent.futures.Future[Any]:
        """Trace on `session` (a test's own session; the viewer's comes by `set_session`)."""
        self.session = session
        self.replay = {**replay_of(session), **self.replay}
        return self._worker.submit(self._run, lambda: self._attach(session), self._armed)

    def set_session(self, session: TritonSession | None) -> None:
        """The viewer's session changed: the old one's tracer is read once more and let go; a
        new one is traced at once when the mode is "all"."""
        self.session = session
        self.replay = replay_of(session) if session is not None else {}
        if self.mode is TraceMode.NEXT:
            self._set_mode(TraceMode.OFF)  # what was left to trace was the old session's
        every = self.mode is TraceMode.ALL
        self._submit(lambda: self._switch(session, every))

    def trace_next(self, n: int) -> None:
        self._set_mode(TraceMode.NEXT)
        session = self.session
        self._submit(lambda: self._on(session, lambda: self.xray.trace_next(n)))

    def trace_all(self, on: bool) -> None:
        self._set_mode(TraceMode.ALL if on else TraceMode.OFF)
        session = self.session
        self._submit(lambda: self._on(session, lambda: self.xray.trace_every(on)) if on else self._off())

    def trace_off(self) -> None:
        self.trace_all(False)

    def choose(self, request_id: str | None) -> None:
        """The user chose a request (a log row, the slowest table): the view stops following
        the live picture."""
        self.view.follow.setChecked(False)
        self.select(request_id)

    def select(self, request_id: str | None) -> None:
        self.view.show_request(request_id, self.xray.get(request_id) if request_id else None)

    def live_frame_shown(self, request_id: str) -> None:
        """A traced live frame is on the screen: shown here once its trace is in (following)."""
        self.followed = request_id

    def _set_mode(self, mode: TraceMode) -> None:
        if mode is not self.mode:
            self.mode = mode
            self.mode_changed.emit(mode.value)

    def _submit(self, work: Callable[[], object]) -> None:
        if not self._closed:  # (the viewer closing: its session closes after this part)
            self._worker.submit(self._run, work, self._armed)

    # -- the worker thread ----------------------------------------------------------------
    def _attach(self, session: TritonSession | None) -> None:
        if session is None:
            raise RuntimeError("request tracing: connect to a server first")
        if self._attached is not session or self.xray.tracer is None:
            self.xray.attach(session)  # blocking: the server's trace settings
            self._attached = session

    def _on(self, session: TritonSession | None, then: Callable[[], None]) -> None:
        self._attach(session)
        then()

    def _off(self) -> None:
        if self.xray.tracer is not None:
            self.xray.trace_every(False)

    def _switch(self, session: TritonSession | None, every: bool) -> None:
        if self.xray.tracer is not None and self._attached is not session:
            self.xray.poll()  # what the old session's server wrote so far
            self.xray.detach()
            self._attached = None
        if session is not None and every:
            self._on(session, lambda: self.xray.trace_every(True))

    def _run(self, work: Callable[[], object], then: Callable[[object], None]) -> None:
        # The result (or the error's text) goes back to the GUI thread.
        try:
            result: object = work()
        except Exception as e:
            self.bridge.post(self._failed, str(e))
            self.bridge.post(then, None)
            return
        self.bridge.post(then, result)

    # -- answers (GUI thread) -------------------------------------------------------------
    def _armed(self, _result: object = None) -> None:
        self.view.set_armed(self.xray.armed)
        self.view.set_notes(self.xray.notes)

    def _failed(self, message: str) -> None:
        self.view.set_notes([*self.xray.notes, message])
        if self.report is not None:
            self.report(message, True)

    def _poll(self) -> None:
        if self._polling or self.xray.tracer is None:
            return
        self._polling = True
        self._worker.submit(self._run, self.xray.poll, self._polled)

    def _polled(self, found: object) -> None:
        self._polling = False
        self.view.set_armed(self.xray.armed)
        if self.mode is TraceMode.NEXT and self.xray.armed == 0:
            self._set_mode(TraceMode.OFF)  # the N are taken (their traces may still come)
        if not isinstance(found, list) or not found:
            return
        self.view.set_slowest(self.xray.slowest(SLOWEST_LISTED))
        followed = self.followed
        if self.view.follow.isChecked() and followed is not None and self.xray.get(followed) is not None:
            self.followed = None
            self.select(followed)
        elif self.view.request_id is not None and self.view.trace is None:
            self.select(self.view.request_id)  # its trace just came

    # -- exports ----------------------------------------------------------------------------
    def _export_asked(self, request_id: str) -> None:
        path = self.ask_path(request_id) if self.ask_path is not None else None
        if path:
            self.export(request_id, path)

    def export(self, request_id: str, path: str) -> concurrent.futures.Future[Any]:
        """Write `request_id`'s tensors for perf_analyzer (worker thread), then show the
        command line that replays them."""
        trace = self.xray.get(request_id)
        return self._worker.submit(self._run, lambda: self._write(trace, path), self._exported)

    def _write(self, trace: RequestTrace | None, path: str) -> str:
        if trace is None or not trace.inputs:
            raise ValueError("this request's tensors were not kept: trace it again to export it")
        types = {k: v for k, v in dict(self.replay.get("types", {})).items() if k in trace.inputs}
        write_input_data(path, [trace.inputs], types or None, batched=bool(self.replay.get("batched", True)))
        return replay_command(
            model=str(self.replay.get("model", trace.model)),
            url=str(self.replay.get("url", "localhost:8001")),
            protocol=str(self.replay.get("protocol", "grpc")),
            input_file=Path(path),
            batch=int(self.replay.get("batch", 1)),
            concurrency=int(self.replay.get("concurrency", 1)),
            version=str(self.replay.get("version", "")),
        )

    def _exported(self, command: object) -> None:
        if isinstance(command, str):
            self.view.set_command(command)
            if self.report is not None:
                self.report("perf_analyzer input data written: the command line is in the X-ray view", False)

    def _chrome_asked(self, every: bool) -> None:
        traces = self._chrome_traces(every)
        path = self.ask_chrome_path(len(traces)) if self.ask_chrome_path is not None and traces else None
        if path:
            self.export_chrome(path, every)

    def _chrome_traces(self, every: bool) -> list[RequestTrace]:
        if every:
            return sorted(self.xray.kept(), key=lambda t: t.start_ns)
        return [self.view.trace] if self.view.trace is not None else []

    def export_chrome(self, path: str, every: bool) -> concurrent.futures.Future[Any]:
        """The traced requests (`every`), or the one shown, as Chrome trace-event JSON."""
        traces = self._chrome_traces(every)

        def write() -> str:
            if not traces:
                raise ValueError("no traced request to write: trace some first")
            write_chrome_trace(path, traces)
            return f"{len(traces)} traced request(s) written to {path} (open it in ui.perfetto.dev)"

        return self._worker.submit(self._run, write, self._chrome_written)

    def _chrome_written(self, message: object) -> None:
        if isinstance(message, str) and self.report is not None:
            self.report(message, False)

    def close(self) -> None:
        self._closed = True
        self.timer.stop()
        self.bridge.close()
        self._worker.shutdown(wait=False, cancel_futures=True)
