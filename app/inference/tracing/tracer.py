"""`Tracer`: which requests a session traces, what it records of them, and where the server's
side comes from. Qt-free; the session (app.inference.core) holds one when asked to trace.

- Which: `TraceSelection` (`--trace all|N|slowest:N`, the viewer's "Trace the next N"):
  `begin()` answers None for a request not traced, at the cost of one attribute read (no
  lock, no allocation): untraced requests do not pay for tracing.
- What: a `RequestRecorder` per traced request, to which the request's path adds its client
  stages (monotonic seconds, the session's clock) and facts; the GUI may add its own later
  (`add_stage`: the hand-over and the paint).
- Where the server's side comes from, decided once at `start()` from the server's trace
  settings: Triton's trace file when it is on this machine (the embedded server's always
  is), the app's OTLP receiver when the server posts there (OpenTelemetry mode: a
  `traceparent` goes with each traced request), else nothing: the client's stages alone,
  and a sentence that says why (`notes`).

Blocking calls (`start`, `arm`, `poll`, `close`: the server's settings, the trace files):
from a worker thread or the command line, never the GUI thread.
"""

from __future__ import annotations

import enum
import heapq
import logging
import os
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from app.inference.tracing.clock import ClockPlacement, ServerClock
from app.inference.tracing.matching import ClientRecord, TraceCollector
from app.inference.tracing.otlp import TRACEPARENT, OtlpReceiver, new_traceparent
from app.inference.tracing.server_trace import ServerTrace
from app.inference.tracing.settings import TraceControl
from app.inference.tracing.spans import ClientStage, RequestTrace
from app.inference.tracing.trace_file import TraceFileReader

log = logging.getLogger(__name__)

# The embedded server's private work folders (app.server.embedded): their trace files are
# the app's own, deleted once read.
OWN_SERVER_FOLDER = "triton-viewer-server-"


class SelectionKind(enum.StrEnum):
    ALL = "all"
    NEXT = "next"  # the next N requests
    SLOWEST = "slowest"  # all traced, the N slowest kept


class SelectionError(ValueError):
    pass


@dataclass
class TraceSelection:
    kind: SelectionKind
    count: int = 0  # NEXT: how many are left to trace; SLOWEST: how many to keep
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str) -> TraceSelection:
        """`all`, `N` (the first N requests) or `slowest:N`; SelectionError naming the input."""
        value = text.strip().lower()
        if value == "all":
            return cls(SelectionKind.ALL)
        slowest = value.startswith("slowest:")
        kind = SelectionKind.SLOWEST if slowest else SelectionKind.NEXT
        number = value.removeprefix("slowest:")
        if not number.isdigit() or int(number) < 1:
            raise SelectionError(
                f"--trace {text!r}: expected all, a number of requests (e.g. 20) "
                "or slowest:N (e.g. slowest:5)"
            )
        return cls(kind, int(number))

    @property
    def active(self) -> bool:
        """Whether a request submitted now may be traced (read without the lock: a stale
        answer only delays a request's tracing by one)."""
        return self.kind is not SelectionKind.NEXT or self.count > 0

    def take(self) -> bool:
        if self.kind is not SelectionKind.NEXT:
            return True
        with self._lock:
            if self.count <= 0:
                return False
            self.count -= 1
            return True

    def arm(self, n: int) -> None:
        """Trace `n` more requests (the viewer's "Trace the next N requests")."""
        with self._lock:
            self.kind = SelectionKind.NEXT
            self.count += max(0, n)

    def every(self, on: bool) -> None:
        """Trace every request from now on (`on`), or none more."""
        with self._lock:
            self.kind, self.count = (SelectionKind.ALL, 0) if on else (SelectionKind.NEXT, 0)


class SlowestKept:
    """The N slowest traces so far (all of them when `n` is None), bounded: `offer` answers
    which traces fell out (to be written without their trace), `kept` the ones left, in
    time order."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self._heap: list[tuple[float, int, RequestTrace]] = []
        self._count = 0

    def offer(self, trace: RequestTrace) -> list[RequestTrace]:
        self._count += 1
        if self.n is None:
            self._heap.append((trace.duration_ms, self._count, trace))
            return []
        heapq.heappush(self._heap, (trace.duration_ms, self._count, trace))
        dropped = []
        while len(self._heap) > self.n:
            dropped.append(heapq.heappop(self._heap)[2])
        return dropped

    def kept(self) -> list[RequestTrace]:
        return sorted((t for _, _, t in self._heap), key=lambda t: t.start_ns)


class RequestRecorder:
    """The client's stages of one traced request. Appended by one thread at a time (the
    request's path moves it from thread to thread, never two at once)."""

    __slots__ = ("facts", "headers", "inputs", "request_id", "stages", "trace_id")

    def __init__(self, request_id: str, headers: dict[str, str] | None = None, trace_id: str = "") -> None:
        self.request_id = request_id
        self.stages: list[ClientStage] = []
        self.facts: dict[str, Any] = {}
        self.headers = headers  # sent with the request (OpenTelemetry: its traceparent)
        self.trace_id = trace_id
        # The tensors sent (input name -> array, this request's own, with its batch axis):
        # for the perf_analyzer export. Held only for traced requests, until given out.
        self.inputs: dict[str, Any] = {}

    def stage(self, name: str, start_s: float, end_s: float) -> None:
        """A stage in the session's monotonic seconds (`time.monotonic()`)."""
        self.stages.append(ClientStage(name, int(start_s * 1e9), int(end_s * 1e9)))


class TraceSource(Protocol):
    def poll(self) -> list[ServerTrace]: ...


MAX_QUEUED = 4096


class _FanOut:
    """One source read for several tracers (two sessions on one server share its trace
    files: the first to read a file would otherwise take the other's traces with it)."""

    def __init__(self, source: TraceSource) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._queues: list[deque[ServerTrace]] = []

    def subscribe(self) -> _Subscriber:
        queue: deque[ServerTrace] = deque(maxlen=MAX_QUEUED)
        with self._lock:
            self._queues.append(queue)
        return _Subscriber(self, queue)

    def unsubscribe(self, queue: deque[ServerTrace]) -> bool:
        """True when no one is left."""
        with self._lock:
            self._queues = [q for q in self._queues if q is not queue]
            return not self._queues

    def poll_into(self, mine: deque[ServerTrace]) -> list[ServerTrace]:
        with self._lock:
            found = self.source.poll()
            for queue in self._queues:
                queue.extend(found)
            out = list(mine)
            mine.clear()
        return out


class _Subscriber:
    def __init__(self, fan_out: _FanOut, queue: deque[ServerTrace]) -> None:
        self.fan_out = fan_out
        self.queue = queue

    @property
    def source(self) -> TraceSource:
        return self.fan_out.source

    def poll(self) -> list[ServerTrace]:
        return self.fan_out.poll_into(self.queue)

    def unsubscribe(self) -> None:
        if self.fan_out.unsubscribe(self.queue):
            with _FILES_LOCK:
                for path, fan_out in list(_FILES.items()):
                    if fan_out is self.fan_out:
                        del _FILES[path]


_FILES: dict[Path, _FanOut] = {}  # by trace file: one reader each, for every tracer of this process
_FILES_LOCK = threading.Lock()


def _file_source(trace_file: Path, consume: bool) -> _Subscriber:
    with _FILES_LOCK:
        fan_out = _FILES.get(trace_file)
        if fan_out is None:
            fan_out = _FILES[trace_file] = _FanOut(TraceFileReader(trace_file, consume=consume))
        return fan_out.subscribe()


class Tracer:
    def __init__(
        self,
        selection: TraceSelection,
        model: str,
        *,
        control: TraceControl | None = None,
        source: TraceSource | None = None,
        placement: ClockPlacement | None = None,
        traceparent: bool = False,
        notes: list[str] | None = None,
    ) -> None:
        self.selection = selection
        self.model = model
        self.control = control
        self.source = source
        self.placement = placement or ClockPlacement(same_machine=True)
        self.collector = TraceCollector(self.placement)
        self.traceparent = traceparent
        self.notes = list(notes or [])
        # Keep each traced request's tensors (the perf_analyzer export): off unless asked,
        # a megabyte or more per request.
        self.keep_inputs = False
        # The traced requests not given out yet (the command line holds their records back).
        self._open_ids: set[str] = set()
        # The traced requests whose record has not reached the collector yet, and the GUI's
        # stages that came for them meanwhile (the GUI thread may run the result's slot
        # before the request path's thread has handed the record on); the lock makes "not
        # in the collector yet" and the record's arrival one step: no stage falls between.
        self._unfinished: set[str] = set()
        self._early_stages: dict[str, list[ClientStage]] = {}
        self._stages_lock = threading.Lock()
        self._server_on = control is not None and source is not None

    # -- the session's side (any thread) -------------------------------------------
    def begin(self, request_id: str) -> RequestRecorder | None:
        """A recorder when this request is traced, None (cheaply) when it is not."""
        if not self.selection.active or not self.selection.take():
            return None
        self._open_ids.add(request_id)
        with self._stages_lock:
            self._unfinished.add(request_id)
        if self.traceparent:
            header, trace_id = new_traceparent()
            return RequestRecorder(request_id, {TRACEPARENT: header}, trace_id)
        return RequestRecorder(request_id)

    def finished(
        self,
        recorder: RequestRecorder,
        *,
        server_request_id: str | None = None,
        send_s: float | None = None,
        reply_s: float | None = None,
    ) -> None:
        """The request ended (its result handed on): its record waits for the server's side."""
        record = ClientRecord(
            recorder.request_id,
            self.model,
            recorder.stages,
            send_ns=None if send_s is None else int(send_s * 1e9),
            reply_ns=None if reply_s is None else int(reply_s * 1e9),
            facts=recorder.facts,
            server_request_id=server_request_id or recorder.request_id,
            inputs=recorder.inputs,
        )
        with self._stages_lock:
            self._unfinished.discard(recorder.request_id)
            record.stages.extend(self._early_stages.pop(recorder.request_id, ()))
            self.collector.add_client(record)

    def add_stage(self, request_id: str, name: str, start_s: float, end_s: float) -> bool:
        """A stage the GUI timed around the result (the hand-over, the paint): kept for the
        request's trace until it is given out (False after that, or when not traced)."""
        stage = ClientStage(name, int(start_s * 1e9), int(end_s * 1e9))
        with self._stages_lock:
            if self.collector.add_stage(request_id, stage):
                return True
            if request_id in self._unfinished:  # its record is still on its way to the collector
                self._early_stages.setdefault(request_id, []).append(stage)
                return True
        return False

    # -- the caller's side (a worker thread) ---------------------------------------
    def poll(self, *, flush: bool = False) -> list[RequestTrace]:
        """The traces complete since the last poll (reads the server's side first); with
        `flush` (the end of a run), everything still waiting. Every traced request's, for
        SLOWEST too: the caller keeps the slowest (`SlowestKept`), so that it can hold back
        what it writes of them until the end."""
        if self.source is not None:
            try:
                self.collector.add_server(self.source.poll())
            except OSError as e:  # a trace folder gone (the server stopped): client stages only
                log.warning("cannot read the server's traces: %s", e)
        found = self.collector.ready(flush=flush)
        if self.selection.kind is not SelectionKind.SLOWEST:
            # Given out: no longer "traced and waiting" (a long traced live stream would keep
            # every id otherwise). slowest:N keeps them: its records are held to the end.
            for trace in found:
                self._open_ids.discard(trace.request_id)
        if (
            self.selection.kind is SelectionKind.NEXT
            and not self.selection.active
            and self.collector.waiting == 0
            and not self.in_flight
        ):
            self._server_off()
        return found

    @property
    def in_flight(self) -> int:
        """Traced requests begun and not ended yet: the server must still trace them (turning
        its tracing off when the first one's trace came would leave a later one untraced)."""
        with self._stages_lock:
            return len(self._unfinished)

    def is_traced(self, request_id: str) -> bool:
        """Whether this request is traced and its trace not given out yet."""
        return request_id in self._open_ids

    def arm(self, n: int) -> None:
        """Trace the next `n` requests (turning the server's tracing on again if needed).
        The server's tracing first: a live frame sent while it was being turned on would
        otherwise count as one of the n with no server side (its trace never comes)."""
        self._server_needed()
        self.selection.arm(n)

    def trace_every(self, on: bool) -> None:
        """Trace every request from now on (a batch in the viewer), or none more; the
        server's tracing goes off once the last traced request's trace is in."""
        if on:
            self._server_needed()  # before the selection, as in `arm`
        self.selection.every(on)

    def _server_needed(self) -> None:
        if self.control is not None and self.source is not None and not self._server_on:
            self._server_on = self.control.enable(self.model) is not None

    def _server_off(self) -> None:
        if self.control is not None and self._server_on and not self.traceparent:
            self.control.restore()
            self._server_on = False

    def close(self) -> None:
        """Put the server's settings back, stop reading its files (what was read stays to
        be polled); the receiver, if any, is the caller's."""
        if self.control is not None and not self.traceparent:
            self.control.restore()
        self._server_on = False
        if isinstance(self.source, _Subscriber):
            self.collector.add_server(self.source.poll())
            self.source.unsubscribe()
            self.source = None

    # -- set-up --------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        selection: TraceSelection,
        model: str,
        control: TraceControl,
        *,
        same_machine: bool,
        receiver: OtlpReceiver | None = None,
    ) -> Tracer:
        """Read the server's trace settings and choose where its side comes from (see the
        module's docstring); turn its tracing on for `model` when the app reads its file."""
        settings = control.settings(model)
        placement = ClockPlacement(same_machine)
        if settings is None:
            note = control.missing_note or "the server has no tracing"
            return cls(selection, model, notes=[f"{note}: the client's stages only"], placement=placement)
        if settings.opentelemetry:
            if receiver is not None and settings.collector_url == receiver.url:
                return cls(
                    selection,
                    model,
                    control=control,
                    source=receiver,
                    placement=ClockPlacement(same_machine, ServerClock.WALL),
                    traceparent=True,
                )
            where = settings.collector_url or "its collector"
            return cls(
                selection,
                model,
                placement=placement,
                notes=[
                    f"the server posts its traces to OpenTelemetry at {where}, not to this app: "
                    "the client's stages only"
                ],
            )
        trace_file = Path(settings.trace_file) if settings.trace_file else None
        if trace_file is None or not same_machine or not os.access(trace_file.parent, os.R_OK | os.X_OK):
            where = f" to {settings.trace_file}" if settings.trace_file else ""
            return cls(
                selection,
                model,
                placement=placement,
                notes=[
                    f"the server writes its traces{where} on its own machine, which this app cannot read: "
                    "the client's stages only (a server set up for OpenTelemetry can post them here)"
                ],
            )
        own = trace_file.parent.parent.name.startswith(OWN_SERVER_FOLDER)
        source = _file_source(trace_file, consume=own)
        tracer = cls(selection, model, control=control, source=source, placement=placement)
        if selection.active:
            tracer._server_on = control.enable(model) is not None
        else:
            tracer._server_on = False
        return tracer
