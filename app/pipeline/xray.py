"""`XRay`: the viewer's side of request tracing, Qt-free (the X-ray view shows what it holds).

The viewer's session gets a tracer that traces nothing until asked: "Trace the next N
requests" (`trace_next`, for live video), or every request of a batch (`trace_every`). The
traces that come in (`poll`) are kept by request id, the newest `max_kept` of them, so that
the Request log can show the one selected; the slowest of those kept, with their breakdown,
are what the batch's list shows. The GUI adds its own stages to a traced request after the
session has handed its result on: the hand-over to the GUI thread and the paint
(`gui_stage`), before the trace is given out (the tracer waits `settle_s` for them).

Every call that touches the server (`attach`, `trace_next`, `trace_every`, `poll`) blocks:
from an executor, never the GUI thread; `get`, `kept`, `slowest` and `gui_stage` do not.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from app.inference.core.session import TritonSession
from app.inference.tracing.spans import RequestTrace
from app.inference.tracing.tracer import SelectionKind, Tracer, TraceSelection

MAX_KEPT = 500
# How long a traced request's trace waits after its result, for the GUI's stages.
GUI_SETTLE_S = 0.5


class XRay:
    def __init__(self, max_kept: int = MAX_KEPT) -> None:
        self.max_kept = max_kept
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, RequestTrace] = OrderedDict()
        self._tracer: Tracer | None = None
        self.notes: list[str] = []  # why the server's side is missing, once per session

    @property
    def tracer(self) -> Tracer | None:
        return self._tracer

    def attach(self, session: TritonSession) -> Tracer:
        """The session's tracer, tracing nothing yet (blocking: the server's settings)."""
        tracer = session.start_tracing(TraceSelection(SelectionKind.NEXT, 0))  # nothing until asked
        tracer.collector.settle_s = GUI_SETTLE_S
        tracer.keep_inputs = True  # the perf_analyzer export of a selected request
        self._tracer = tracer
        self.notes = list(tracer.notes)
        return tracer

    def detach(self) -> None:
        self._tracer = None

    def trace_next(self, n: int) -> None:
        if self._tracer is not None:
            self._tracer.arm(n)

    def trace_every(self, on: bool) -> None:
        if self._tracer is not None:
            self._tracer.trace_every(on)

    @property
    def tracing_all(self) -> bool:
        """Every request sent from now on is traced (the server's tracing is on for it)."""
        tracer = self._tracer
        return tracer is not None and tracer.selection.kind is SelectionKind.ALL

    @property
    def armed(self) -> int:
        """How many of the next requests are still to be traced."""
        return self._tracer.selection.count if self._tracer is not None else 0

    def gui_stage(self, request_id: str, name: str, start_s: float, end_s: float) -> None:
        """A stage the GUI timed (monotonic s) for a request it got the result of."""
        tracer = self._tracer
        if tracer is not None and tracer.is_traced(request_id):
            tracer.add_stage(request_id, name, start_s, end_s)

    def is_traced(self, request_id: str) -> bool:
        tracer = self._tracer
        return tracer is not None and tracer.is_traced(request_id)

    def poll(self, *, flush: bool = False) -> list[RequestTrace]:
        """The traces complete since the last poll, now kept here too."""
        tracer = self._tracer
        if tracer is None:
            return []
        found = tracer.poll(flush=flush)
        with self._lock:
            for trace in found:
                self._traces[trace.request_id] = trace
                self._traces.move_to_end(trace.request_id)
            while len(self._traces) > self.max_kept:
                self._traces.popitem(last=False)
        return found

    def get(self, request_id: str) -> RequestTrace | None:
        with self._lock:
            return self._traces.get(request_id)

    def kept(self) -> list[RequestTrace]:
        with self._lock:
            return list(self._traces.values())

    def slowest(self, n: int) -> list[RequestTrace]:
        return sorted(self.kept(), key=lambda t: -t.duration_ms)[:n]

    def clear(self) -> None:
        with self._lock:
            self._traces.clear()
