"""`TritonSession`: asynchronous detection requests to one or more Triton servers: its
lifecycle (open, close) and the submit API. Its collaborators, one job each: the requests in
flight and the window (in_flight.py), one request's path from image to result
(request_path.py), what opening finds out (model_discovery.py, transport_choice.py) and the
server's statistics (server_statistics.py).

Threads, and why:
- `submit()` may be called from any thread. It only takes a slot in the in-flight
  windows (the job's group, then the session's: backpressure) and queues the request
  on the worker pool (or, with `send_in_caller`, prepares and sends it right there).
- Worker pool (`decode_workers` threads): pre-processing, sending (`async_infer`),
  decoding + NMS, and user callbacks. Heavy numpy work never runs on a gRPC thread
  or on the caller's (GUI) thread.
- gRPC's channel threads run the path's `_on_reply`, which only hands off to the pool: a
  slow callback there would delay every other reply on the channel.
- One timer thread runs retry back-offs.
Every request ends exactly once (`RequestPath.finish` is guarded): ok, failed, timeout or
cancelled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import itertools
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from app.inference.core.group import RequestGroup
from app.inference.core.in_flight import InFlight
from app.inference.core.model_discovery import discover
from app.inference.core.pool import ConnectionPool
from app.inference.core.request import PendingRequest, ResultCallback
from app.inference.core.request_path import RequestPath
from app.inference.core.scheduler import DelayedCalls
from app.inference.core.server_statistics import read_server_counters
from app.inference.core.spec import MAX_REQUEST_TIMEOUT_S, SessionSpec
from app.inference.core.stats import RequestStats
from app.inference.core.trace_hooks import PathTracing
from app.inference.core.tracing_control import open_tracer
from app.inference.core.transport_choice import choose_transport
from app.inference.errors import (
    SessionClosedError,
    SessionError,
    WindowFullError,
)
from app.inference.introspection.discovery import ModelInfo, model_config_if_any
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.introspection.pipeline import stage_owners
from app.inference.introspection.server_stats import ServerCounters
from app.inference.profiles.profile import ModelProfile
from app.inference.profiles.profile_types import SIZE_DEFAULT
from app.inference.protocol import ServerProtocol
from app.inference.result import InferenceResult
from app.inference.tracing.otlp import OtlpReceiver
from app.inference.tracing.tracer import Tracer, TraceSelection
from app.inference.transports.channel import Channel, Headers
from app.inference.transports.open_channel import open_channel
from app.inference.transports.transport import Transport
from app.inference.transports.wire import Wire
from app.model_states import ModelEntry


class SessionState(enum.StrEnum):
    UNOPENED = "unopened"
    OPENING = "opening"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class TritonSession:
    """Lifecycle (like httpx's client): unopened -> open() -> close(); `with` and `async with`
    work; close() is idempotent and may come from any thread, even while open() runs."""

    def __init__(self, spec: SessionSpec) -> None:
        """An unopened session as `spec` says (nothing blocks here: `open()` connects, and
        reads the profile file if the spec names one). `open_session` is the usual way in."""
        if spec.embedded:
            raise ValueError("the spec names no server (the embedded server's address is filled in first)")
        protocols = {endpoint.protocol for endpoint in spec.endpoints}
        if len(protocols) > 1:
            raise ValueError(
                f"the servers of one session speak one protocol (gRPC or HTTP), not both: {list(spec.urls)}"
            )
        self.spec = spec
        self.transport: Transport | None = None
        self.transport_note = ""  # why the transport differs from the one asked for
        self.stats = RequestStats()
        self.info: ModelInfo | None = None
        self.models: list[ModelEntry] = []
        # What the server has of Triton's extensions; what it lacks is said once (`notes`).
        self.features = ServerFeatures()
        self._state = SessionState.UNOPENED
        self._headers = dict(spec.connection.headers)
        # One lock for the state and the requests in flight (see in_flight.py).
        self._lock = threading.Lock()
        self._in_flight = InFlight(self._lock, spec.limits.max_in_flight)
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:6]
        self._pool: ConnectionPool | None = None
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self._timer: DelayedCalls | None = None
        self._path: RequestPath | None = None  # once open
        self._groups: weakref.WeakSet[RequestGroup] = weakref.WeakSet()
        # The tracer, once start_tracing() made one; the request path's calls into it.
        self._tracing = PathTracing()

    @property
    def urls(self) -> list[str]:
        """The servers, as given (for messages)."""
        return list(self.spec.urls)

    @property
    def protocol(self) -> ServerProtocol:
        """gRPC or HTTP/REST, by the URLs' scheme (http://, https://; grpc:// or none: gRPC)."""
        return self.spec.protocol

    @property
    def state(self) -> SessionState:
        return self._state

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> TritonSession:
        return self if self._state is SessionState.OPEN else self.open()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> TritonSession:
        # open() blocks on the network: never on the event loop's thread.
        if self._state is not SessionState.OPEN:
            await asyncio.get_running_loop().run_in_executor(None, self.open)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def open(self) -> TritonSession:
        """Connect, check health, discover the model and its profile. Raises SessionError
        (SessionClosedError when close() came first or interrupted it), or ProfileError
        naming the spec's profile file when it cannot be read (the session stays unopened)."""
        spec = self.spec
        overrides = spec.profile.load()
        with self._lock:
            if self._state is SessionState.CLOSED:
                raise SessionClosedError("the session was closed before it opened")
            if self._state is not SessionState.UNOPENED:
                raise SessionError(f"a session can be opened once (it is {self._state})")
            self._state = SessionState.OPENING
            pool = self._pool = ConnectionPool(
                spec.endpoints, spec.connection, spec.channel_factory or open_channel
            )
        try:
            found = discover(
                pool,
                spec.model,
                spec.version,
                self._headers,
                overrides,
                spec.timeouts.request_s,
            )
            self.models, self.info, self.features = found.models, found.info, found.features
            live = found.live
            batch = self._batch_size()
            channels = {endpoint: pool.first_channel(endpoint) for endpoint in live}
            self.transport, self.transport_note = choose_transport(
                spec.delivery.transport,
                channels,
                self.info,
                self._headers,
                batch,
                self.wire,
                self.features,
                spec.connection.max_output_bytes,
            )
            with self._lock:
                if self._state is not SessionState.OPENING:
                    raise SessionClosedError("the session was closed while connecting")
                # Why threads here: decoding is numpy/OpenCV work that must stay off gRPC's threads.
                self._workers = concurrent.futures.ThreadPoolExecutor(
                    spec.limits.decode_workers, "triton-worker"
                )
                self._timer = DelayedCalls()
                self._path = RequestPath(
                    spec,
                    self._in_flight,
                    self.stats,
                    pool,
                    self.transport,
                    self.info,
                    self._workers,
                    self._timer,
                    batch,
                    lambda: self._state is SessionState.OPEN,
                    self._tracing,
                )
                self.stats.reset()
                self._state = SessionState.OPEN
        except BaseException as e:
            if self.transport is not None:
                self.transport.close()
            pool.close()
            with self._lock:
                closed_meanwhile = self._state is not SessionState.OPENING
                self._state = SessionState.CLOSED
            if closed_meanwhile and not isinstance(e, SessionClosedError):
                raise SessionClosedError("the session was closed while connecting") from None
            raise
        return self

    @property
    def pool(self) -> ConnectionPool | None:
        """The channels (None until open): other models' sessions share them (shared_channels)."""
        return self._pool

    @property
    def wire(self) -> Wire:
        """How tensors are written: over HTTP binary where the server declares it, else JSON."""
        if self.protocol is ServerProtocol.GRPC:
            return Wire()
        return Wire(ServerProtocol.HTTP, binary=self.features.binary_tensors)

    @property
    def notes(self) -> list[str]:
        """A sentence per Triton extension the server lacks (callers show the new ones; shared
        memory's is the `transport_note`), and a default input size said."""
        return notes_of(self.features, self.transport_note, self.protocol, self.info)

    def _batch_size(self) -> int:
        """Requests per call: 1 unless client batching is on and the model batches."""
        assert self.info is not None
        limit = self.info.client_batch_limit
        if self.spec.delivery.client_batch <= 1 or limit <= 0 or not self.info.profile.has_batch_dim:
            return 1
        return min(self.spec.delivery.client_batch, limit)

    @property
    def batching(self) -> int:
        """Requests per call (1: client batching off or not possible with this model)."""
        return self._path.batching if self._path is not None else 1

    def describe_transport(self) -> str:
        """e.g. "shared memory (inputs and outputs), client batches of 8 (2 ms)"."""
        text = self.transport.description if self.transport is not None else "not connected"
        if self.batching > 1:
            text += f", client batches of {self.batching} ({self.spec.delivery.batch_delay_ms:g} ms)"
        return text

    def read_server_counters(self) -> ServerCounters:
        """Triton's cumulative statistics of the model, summed over the servers (blocking).
        ExtensionMissingError ("server statistics not available from this server") when the
        server has no statistics extension."""
        if self._pool is None or self.info is None:
            raise SessionError("the session is not open")
        timeout_s, version = self.spec.timeouts.request_s, self.spec.version
        return read_server_counters(self._pool, self.info, self.features, self._headers, timeout_s, version)

    def pipeline_stages(self) -> dict[str, str]:
        """{stage model: its pipeline} among the ready models (blocking: a config call each)."""
        if self._pool is None:
            raise SessionError("the session is not open")
        channel = self._pool.first_channel(self.spec.endpoints[0])
        ready = [m.name for m in self.models if m.ready]
        return stages_of(channel, ready, self._headers, self.spec.timeouts.request_s, self.features)

    @property
    def profile(self) -> ModelProfile:
        if self.info is None:
            raise SessionError("the session is not open")
        return self.info.profile

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def submitters_waiting(self) -> int:
        """Threads blocked in submit() for a place in the session's window now."""
        return self._in_flight.window.waiting

    def start_tracing(self, selection: TraceSelection, *, receiver: OtlpReceiver | None = None) -> Tracer:
        """Trace the requests `selection` picks from now on, client and server (blocking: it
        reads and changes the server's trace settings; close() puts them back). The tracer
        gives out the traces (`Tracer.poll`); untraced requests pay nothing for it."""
        if self._pool is None or self.info is None:
            raise SessionError("the session is not open")
        if self._tracing.tracer is None:
            self._tracing.tracer = open_tracer(
                self._pool,
                self.spec.endpoints,
                self.info.name,
                self.features,
                self._headers,
                selection,
                receiver,
            )
        return self._tracing.tracer

    @property
    def tracer(self) -> Tracer | None:
        return self._tracing.tracer

    def close(self, drain_timeout: float = 2.0) -> None:
        """Stop accepting; let in-flight requests finish for up to `drain_timeout` s; cancel the rest."""
        with self._lock:
            state = self._state
            if state in (SessionState.CLOSING, SessionState.CLOSED):
                return
            if state is SessionState.UNOPENED:
                self._state = SessionState.CLOSED
                return
            self._state = SessionState.CLOSING
        # Wake submitters waiting for a slot (theirs or their group's): they see CLOSING.
        self._in_flight.window.close()
        for group in list(self._groups):
            group.window.close()
        if state is SessionState.OPENING:
            # open() is blocked on the network in another thread: closing the channels
            # makes that call fail now; open() then cleans up and reports the close.
            assert self._pool is not None
            self._pool.close()
            return
        self._in_flight.wait_drained(drain_timeout)
        self.cancel_all()
        if self._path is not None:
            self._path.close()  # what waits in a batch was just cancelled: nothing is sent
        if self._timer is not None:
            for call in self._timer.stop():
                call()  # each ends its request (cancelled) now that we are closing
        if self._workers is not None:
            self._workers.shutdown(wait=True)
        if self._tracing.tracer is not None:
            self._tracing.tracer.close()  # the server's trace settings put back (its traces stay readable)
        if self.transport is not None:
            self.transport.close()  # unregister and unlink the shared-memory regions
        if self._pool is not None:
            self._pool.close()
        self._state = SessionState.CLOSED

    # -- submitting -----------------------------------------------------------------
    def group(self, limit: int, name: str = "", on_drained: Callable[[], None] | None = None) -> RequestGroup:
        """A job's own window (at most `limit` of its requests in flight), cancel scope and
        completion (`on_drained` once the group is closed and its last result handed on)."""
        group = RequestGroup(self, limit, name, on_drained)
        self._groups.add(group)
        return group

    def cancel_group(self, group: RequestGroup) -> int:
        """Cancel the requests of `group` still in flight (the group refuses new ones first:
        `RequestGroup.cancel`); submitters waiting for a session slot re-check their group."""
        self._in_flight.window.wake()
        return sum(self.cancel(rid) for rid in self._in_flight.ids(group))

    def submit(
        self,
        image: np.ndarray,
        callback: ResultCallback,
        *,
        source: str | None = None,
        frame: int | None = None,
        tag: object = None,
        timeout_s: float | None = None,
        block: bool = True,
        wait_s: float | None = None,
        group: RequestGroup | None = None,
        source_size: tuple[int, int] | None = None,
        read_span: tuple[float, float] | None = None,
    ) -> str | None:
        """Queue one RGB uint8 image; `callback(result)` is called exactly once, on a worker
        thread (or on this one, with `send_in_caller`, when it fails before being sent).

        `source_size`: (width, height) of the source when `image` was decoded smaller (a
        JPEG at 1/2 ...): results are then reported in the source's pixels.
        `read_span`: when the image's reading began and ended (monotonic s), for its trace.

        Returns the request id, or None when not sent: no slot in the windows and `block`
        is False (live sources drop that frame), `wait_s` passed, or `group` was cancelled.
        Raises SessionClosedError once the session is closing.
        """
        if self._state is not SessionState.OPEN:
            raise SessionClosedError(f"the session is {self._state}; no new requests")
        wait = (None if wait_s is None else wait_s) if block else 0.0
        started = time.monotonic()
        if group is not None and not group.window.acquire(wait):
            return None
        if wait is not None:
            wait = max(0.0, wait - (time.monotonic() - started))
        timeout_s = (
            self.spec.timeouts.request_s if timeout_s is None else min(timeout_s, MAX_REQUEST_TIMEOUT_S)
        )
        aborted = (lambda: group.cancelled) if group is not None else None
        window = self._in_flight.window
        in_flight_before = window.used  # for a traced request's "in flight 2 of 2"
        if not window.acquire(wait, aborted):
            if group is not None:
                group.window.release()
            if self._state is not SessionState.OPEN:
                raise SessionClosedError(f"the session is {self._state}; no new requests")
            return None
        now = time.monotonic()
        shape = getattr(image, "shape", (0, 0))
        width = int(shape[1]) if len(shape) > 1 else 0
        height = int(shape[0]) if shape else 0
        req = PendingRequest(
            id=f"{self._id_prefix}-{next(self._ids)}",
            callback=callback,
            source=source,
            frame=frame,
            tag=tag,
            group=group,
            width=source_size[0] if source_size else width,
            height=source_size[1] if source_size else height,
            started=now,
            deadline=now + timeout_s,
            timeout_s=timeout_s,
        )
        req.trace = self._tracing.begin(req.id, started, now, in_flight_before, window.size, read_span)
        with self._lock:
            closed = self._state is not SessionState.OPEN
            refused = closed or (group is not None and not group.admit())
            if not refused:
                self._in_flight.add(req)
        if refused:
            window.release()
            if group is not None:
                group.window.release()
            if closed:
                raise SessionClosedError(f"the session is {self._state}; no new requests")
            return None
        self.stats.record_sent()
        assert self._path is not None and self._workers is not None  # open
        if self.spec.limits.send_in_caller:
            self._path.prepare_and_send(req, image)
        else:
            self._workers.submit(self._path.prepare_and_send, req, image)
        return req.id

    def submit_future(self, image: np.ndarray, **kwargs: Any) -> concurrent.futures.Future[InferenceResult]:
        """Future mode: resolves with the InferenceResult (whatever its status). Cancelling
        the future cancels the request."""
        future: concurrent.futures.Future[InferenceResult] = concurrent.futures.Future()

        def done(result: InferenceResult) -> None:
            if future.set_running_or_notify_cancel():
                future.set_result(result)

        request_id = self.submit(image, done, **kwargs)
        if request_id is None:
            raise WindowFullError(f"{self.spec.limits.max_in_flight} requests already in flight")
        future.add_done_callback(lambda f: f.cancelled() and self.cancel(request_id))
        return future

    def infer(self, image: np.ndarray, **kwargs: Any) -> InferenceResult:
        """Blocking convenience around future mode."""
        return self.submit_future(image, **kwargs).result()

    def cancel(self, request_id: str) -> bool:
        req = self._in_flight.get(request_id)
        if req is None or self._path is None:
            return False
        self._path.cancel(req)
        return True

    def cancel_all(self) -> int:
        return sum(self.cancel(rid) for rid in self._in_flight.ids())


def notes_of(
    features: ServerFeatures, transport_note: str | None, protocol: ServerProtocol, info: ModelInfo | None
) -> list[str]:
    """A session's notes (`TritonSession.notes`)."""
    notes = [n for n in features.notes() if n != transport_note]
    if protocol is ServerProtocol.HTTP and not features.binary_tensors and info is not None:
        notes.append(MISSING[Extension.BINARY_DATA])
    if info is not None and info.profile.input_size_source == SIZE_DEFAULT:
        # Never a silent default: boxes of a model fed the wrong size are wrong.
        h, w = info.profile.input_size or (0, 0)
        notes.append(f"model {info.name}: input size {h}x{w} is {SIZE_DEFAULT}")
    return notes


def stages_of(
    channel: Channel, models: list[str], headers: Headers, timeout_s: float, features: ServerFeatures
) -> dict[str, str]:
    """{stage model: its pipeline} among `models`, from their configs (`pipeline_stages`)."""

    def read(name: str) -> dict[str, Any] | None:
        return model_config_if_any(channel, name, headers, timeout_s, features=features)

    return stage_owners(models, read)
