"""`TritonSession`: asynchronous detection requests to one or more Triton servers.

Threads, and why:
- `submit()` may be called from any thread. It only takes a slot in the in-flight
  windows (the job's group, then the session's: backpressure) and queues the request
  on the worker pool (or, with `send_in_caller`, prepares and sends it right there).
- Worker pool (`decode_workers` threads): pre-processing, sending (`async_infer`),
  decoding + NMS, and user callbacks. Heavy numpy work never runs on a gRPC thread
  or on the caller's (GUI) thread.
- gRPC's channel threads run `_on_reply`, which only hands off to the pool: a slow
  callback there would delay every other reply on the channel.
- One timer thread runs retry back-offs.
Every request ends exactly once (`_finish` is guarded): ok, failed, timeout or cancelled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import enum
import functools
import itertools
import logging
import math
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from app.inference.core.batcher import ClientBatcher
from app.inference.core.group import RequestGroup
from app.inference.core.model_discovery import discover
from app.inference.core.pool import ConnectionPool
from app.inference.core.scheduler import DelayedCalls
from app.inference.core.spec import (
    MAX_REQUEST_TIMEOUT_S,
    Delivery,
    Limits,
    ProfileSource,
    SessionSpec,
    Timeouts,
)
from app.inference.core.stats import RequestStats
from app.inference.core.trace_hooks import PathTracing
from app.inference.core.tracing_control import open_tracer
from app.inference.core.transport_choice import choose_transport
from app.inference.core.window import Window
from app.inference.decoding.letterbox import BoxTransform, FromReducedSource
from app.inference.errors import (
    ExtensionMissingError,
    SessionClosedError,
    SessionError,
    WindowFullError,
    classify_failure,
    extension_missing,
    redact,
)
from app.inference.introspection.discovery import ModelEntry, ModelInfo
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.introspection.pipeline import pipeline_stages
from app.inference.introspection.server_stats import ServerCounters, add_counters, parse_counters
from app.inference.introspection.stage_stats import stage_counters
from app.inference.profiles.output_check import OutputCheck, OutputError, describe_arrays
from app.inference.profiles.profile import DecodedOutputs, ModelProfile, decode_outputs, preprocess
from app.inference.protocol import ServerProtocol, protocol_of
from app.inference.result import ErrorKind, InferenceResult, RequestTiming, Status
from app.inference.tracing.otlp import OtlpReceiver
from app.inference.tracing.spans import DECODE, READ_OUTPUTS, RETRY_WAIT, SEND
from app.inference.tracing.tracer import RequestRecorder, Tracer, TraceSelection
from app.inference.transports.channel import Call, Channel, ChannelFactory, ConnectionOptions, Reply
from app.inference.transports.open_channel import open_channel
from app.inference.transports.transport import Lease, Transport, TransportKind, declared_outputs
from app.inference.transports.wire import Wire

log = logging.getLogger(__name__)

ResultCallback = Callable[[InferenceResult], None]
MAX_RETRY_BACKOFF_S = 0.5  # a server restarting is noticed within this long of being back
# The most pixels one image may have once prepared: above, a clear refusal instead of a server
# that allocates gigabytes (and keeps them). Raw-image models get a downscaled copy anyway.
MAX_INPUT_PIXELS = 64_000_000


class SessionState(enum.StrEnum):
    UNOPENED = "unopened"
    OPENING = "opening"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(eq=False)
class _Request:
    id: str
    callback: ResultCallback
    source: str | None
    frame: int | None
    tag: Any
    group: RequestGroup | None
    width: int
    height: int
    started: float
    deadline: float
    timeout_s: float
    finished: bool = False
    holds_slots: bool = True  # its places in the session's (and group's) window
    tensor: np.ndarray | None = None  # prepared, until it is sent
    transform: BoxTransform | None = None
    preprocess_ms: float = 0.0
    prepared: float = 0.0  # monotonic time the tensor was ready
    send: _Send | None = None  # the gRPC call carrying it (shared when batched)
    trace: RequestRecorder | None = None  # traced requests only (trace_hooks.py)


@dataclass(eq=False)
class _Send:
    """One gRPC call: one request, or several of the same shape batched by the client."""

    members: list[_Request]
    tensor: np.ndarray
    deadline: float
    attempts: int = 0
    channel: Channel | None = None
    call: Call | None = None  # the attempt in flight
    lease: Lease | None = None
    sent_at: float = 0.0
    answered_at: float = 0.0  # the last attempt's reply (or error) arrived
    ended: bool = False  # answered or given up: its lease went back to the transport

    @property
    def id(self) -> str:
        return ",".join(m.id for m in self.members)


class TritonSession:
    """Lifecycle (like httpx's client): unopened -> open() -> close(); `with` and `async with`
    work; close() is idempotent and may come from any thread, even while open() runs."""

    def __init__(
        self,
        urls: Sequence[str] | str,
        model: str | None = None,
        *,
        options: ConnectionOptions | None = None,
        profile_overrides: dict[str, Any] | None = None,
        timeout_s: float = 10.0,
        retries: int | None = None,
        retry_backoff_s: float = 0.05,
        max_in_flight: int = 64,
        decode_workers: int = 2,
        send_in_caller: bool = False,
        channel_factory: ChannelFactory = open_channel,
        transport: TransportKind = TransportKind.AUTO,
        client_batch: int = 1,
        batch_delay_ms: float = 2.0,
        model_version: str = "",
    ) -> None:
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise ValueError("at least one server URL is needed")
        protocols = {protocol_of(url) for url in self.urls}
        if len(protocols) > 1:
            raise ValueError(
                f"the servers of one session speak one protocol (gRPC or HTTP), not both: {self.urls}"
            )
        # gRPC or HTTP/REST, by the URLs' scheme (http://, https://; grpc:// or none: gRPC).
        self.protocol = protocols.pop()
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"the timeout must be a positive number of seconds, not {timeout_s}")
        timeout_s = min(timeout_s, MAX_REQUEST_TIMEOUT_S)  # beyond it gRPC fails at once
        self.requested_model = model
        # Triton's model version ("": the server's choice, its version policy's latest).
        self.model_version = str(model_version or "").strip()
        self.options = options or ConnectionOptions()
        self.profile_overrides = profile_overrides
        self.timeout_s = timeout_s
        # None: transient failures (server unreachable) are retried until the request's own
        # deadline, so a server restart shorter than the timeout fails nothing.
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.max_in_flight = max_in_flight
        self.decode_workers = decode_workers
        # True: submit() pre-processes and sends on the caller's thread, saving a thread hop
        # per request (~0.2 ms of CPU). For callers that may block (the command line); the
        # GUI keeps the default so its thread never does numpy work or touches the network.
        self.send_in_caller = send_in_caller
        self.channel_factory = channel_factory
        self.requested_transport = transport
        # Client-side batching (models with max_batch_size > 0): up to `client_batch` prepared
        # requests of one shape, or what arrived within `batch_delay_ms`, go as one call.
        self.client_batch = max(1, int(client_batch))
        self.batch_delay_ms = max(0.0, float(batch_delay_ms))
        # What it was built from (the same values as the attributes above; the profile file,
        # if any, was already read into `profile_overrides`).
        self.spec = SessionSpec(
            urls=tuple(self.urls),
            model=model,
            version=self.model_version,
            profile=ProfileSource(overrides=profile_overrides),
            delivery=Delivery(transport, self.client_batch, self.batch_delay_ms),
            timeouts=Timeouts(timeout_s, retries, retry_backoff_s),
            connection=self.options,
            limits=Limits(max_in_flight, decode_workers, send_in_caller),
            channel_factory=channel_factory,
        )
        self.transport: Transport | None = None
        self.transport_note = ""  # why the transport differs from the one asked for
        self.stats = RequestStats()
        self.info: ModelInfo | None = None
        self.models: list[ModelEntry] = []
        # What the server has of Triton's extensions; what it lacks is said once (`notes`).
        self.features = ServerFeatures()
        self._state = SessionState.UNOPENED
        self._headers = dict(self.options.headers)
        self._secrets = list(self._headers.values())
        self._lock = threading.Lock()
        self._drained = threading.Condition(self._lock)
        self._pending: dict[str, _Request] = {}
        # The tracer, once start_tracing() made one (app.inference.core.tracing_control).
        self._tracing = PathTracing()
        self._window = Window(max_in_flight)
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:6]
        self._pool: ConnectionPool | None = None
        self._requested_outputs: list[Any] = []
        self._output_check: OutputCheck | None = None  # what every reply must carry
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self._timer: DelayedCalls | None = None
        self._batcher: ClientBatcher[_Request] | None = None
        self._groups: weakref.WeakSet[RequestGroup] = weakref.WeakSet()

    @classmethod
    def from_spec(cls, spec: SessionSpec) -> TritonSession:
        """An unopened session as `spec` says (blocking: reads its profile file, if any;
        ProfileError when that cannot be read). `open_session` is the usual way in."""
        if spec.embedded:
            raise ValueError("the spec names no server (the embedded server's address is filled in first)")
        session = cls(
            spec.urls,
            spec.model,
            options=spec.connection,
            profile_overrides=spec.profile.load(),
            timeout_s=spec.timeouts.request_s,
            retries=spec.timeouts.retries,
            retry_backoff_s=spec.timeouts.retry_backoff_s,
            max_in_flight=spec.limits.max_in_flight,
            decode_workers=spec.limits.decode_workers,
            send_in_caller=spec.limits.send_in_caller,
            channel_factory=spec.channel_factory or open_channel,
            transport=spec.delivery.transport,
            client_batch=spec.delivery.client_batch,
            batch_delay_ms=spec.delivery.batch_delay_ms,
            model_version=spec.version,
        )
        session.spec = spec
        return session

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
        (SessionClosedError when close() came first or interrupted it)."""
        with self._lock:
            if self._state is SessionState.CLOSED:
                raise SessionClosedError("the session was closed before it opened")
            if self._state is not SessionState.UNOPENED:
                raise SessionError(f"a session can be opened once (it is {self._state})")
            self._state = SessionState.OPENING
            pool = self._pool = ConnectionPool(self.urls, self.options, self.channel_factory)
        try:
            found = discover(
                pool,
                self.requested_model,
                self.model_version,
                self._headers,
                self.profile_overrides,
                self.timeout_s,
            )
            self.models, self.info, self.features = found.models, found.info, found.features
            live = found.live
            batch = self._batch_size()
            channels = {url: pool.first_channel(url) for url in live}
            self._output_check = OutputCheck.of(
                self.info.profile, self.info.outputs, self.info.max_batch_size, self.options.max_output_bytes
            )
            self.transport, self.transport_note = choose_transport(
                self.requested_transport,
                channels,
                self.info,
                self._headers,
                batch,
                self.wire,
                self.features,
                self.options.max_output_bytes,
            )
            with self._lock:
                if self._state is not SessionState.OPENING:
                    raise SessionClosedError("the session was closed while connecting")
                # Why threads here: decoding is numpy/OpenCV work that must stay off gRPC's threads.
                self._workers = concurrent.futures.ThreadPoolExecutor(self.decode_workers, "triton-worker")
                self._timer = DelayedCalls()
                if batch > 1:
                    self._batcher = ClientBatcher(
                        batch, self.batch_delay_ms / 1000, self._dispatch_from_timer, self._timer.call_later
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
    def wire(self) -> Wire:
        """How tensors are written: by protocol, and over HTTP binary only where the server
        declares Triton's binary tensor extension (JSON otherwise)."""
        if self.protocol is ServerProtocol.GRPC:
            return Wire()
        return Wire(ServerProtocol.HTTP, binary=self.features.binary_tensors)

    @property
    def notes(self) -> list[str]:
        """One plain sentence per Triton extension this server turned out not to have (said
        once each: callers show the ones they have not shown yet). Shared memory's is the
        `transport_note`, said with the transport."""
        notes = [n for n in self.features.notes() if n != self.transport_note]
        if (
            self.protocol is ServerProtocol.HTTP
            and not self.features.binary_tensors
            and self.info is not None
        ):
            notes.append(MISSING[Extension.BINARY_DATA])
        return notes

    def _batch_size(self) -> int:
        """Requests per call: 1 unless client batching is on and the model batches."""
        assert self.info is not None
        limit = self.info.client_batch_limit
        if self.client_batch <= 1 or limit <= 0 or not self.info.profile.has_batch_dim:
            return 1
        return min(self.client_batch, limit)

    @property
    def batching(self) -> int:
        """Requests per call (1: client batching off or not possible with this model)."""
        return self._batcher.size if self._batcher is not None else 1

    def describe_transport(self) -> str:
        """e.g. "shared memory (inputs and outputs), client batches of 8 (2 ms)"."""
        text = self.transport.description if self.transport is not None else "not connected"
        if self._batcher is not None:
            text += f", client batches of {self._batcher.size} ({self.batch_delay_ms:g} ms)"
        return text

    def read_server_counters(self) -> ServerCounters:
        """Triton's cumulative statistics of the model, summed over the servers (blocking).
        ExtensionMissingError ("server statistics not available from this server") when the
        server has no statistics extension."""
        if self._pool is None or self.info is None:
            raise SessionError("the session is not open")
        if self.features.lacks(Extension.STATISTICS):
            raise ExtensionMissingError(MISSING[Extension.STATISTICS])
        total: ServerCounters | None = None
        for url in self._pool.urls:
            channel = self._pool.first_channel(url)
            try:
                raw = channel.inference_statistics(
                    self.info.name,
                    headers=self._headers,
                    timeout_s=self.timeout_s,
                    version=self.model_version,
                )
            except Exception as e:
                if extension_missing(e):
                    self.features.mark_missing(Extension.STATISTICS)
                    raise ExtensionMissingError(MISSING[Extension.STATISTICS]) from None
                raise
            counters = parse_counters(raw, self.info.name)
            total = counters if total is None else add_counters(total, counters)
        assert total is not None
        # A pipeline's stages right after: their figures cover (nearly) the same interval.
        channels = [self._pool.first_channel(url) for url in self._pool.urls]
        pipeline = pipeline_stages(self.info.config)
        stages = stage_counters(channels, pipeline, headers=self._headers, timeout_s=self.timeout_s)
        return dataclasses.replace(total, stages=stages)

    @property
    def profile(self) -> ModelProfile:
        if self.info is None:
            raise SessionError("the session is not open")
        return self.info.profile

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._pending)

    @property
    def submitters_waiting(self) -> int:
        """Threads blocked in submit() for a place in the session's window now."""
        return self._window.waiting

    def start_tracing(self, selection: TraceSelection, *, receiver: OtlpReceiver | None = None) -> Tracer:
        """Trace the requests `selection` picks from now on, client and server (blocking: it
        reads and changes the server's trace settings; close() puts them back). The tracer
        gives out the traces (`Tracer.poll`); untraced requests pay nothing for it."""
        if self._pool is None or self.info is None:
            raise SessionError("the session is not open")
        if self._tracing.tracer is None:
            self._tracing.tracer = open_tracer(
                self._pool, self.urls, self.info.name, self.features, self._headers, selection, receiver
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
        self._window.close()
        for group in list(self._groups):
            group.window.close()
        if state is SessionState.OPENING:
            # open() is blocked on the network in another thread: closing the channels
            # makes that call fail now; open() then cleans up and reports the close.
            assert self._pool is not None
            self._pool.close()
            return
        with self._lock:
            deadline = time.monotonic() + drain_timeout
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._drained.wait(remaining)
        self.cancel_all()
        if self._batcher is not None:
            self._batcher.close()  # what waits in a batch was just cancelled: nothing is sent
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
        self._window.wake()
        with self._lock:
            ids = [rid for rid, req in self._pending.items() if req.group is group]
        return sum(self.cancel(rid) for rid in ids)

    def submit(
        self,
        image: np.ndarray,
        callback: ResultCallback,
        *,
        source: str | None = None,
        frame: int | None = None,
        tag: Any = None,
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
        in_flight_before = self._window.used  # for a traced request's "in flight 2 of 2"
        if group is not None and not group.window.acquire(wait):
            return None
        if wait is not None:
            wait = max(0.0, wait - (time.monotonic() - started))
        if timeout_s is not None:
            timeout_s = min(timeout_s, MAX_REQUEST_TIMEOUT_S)
        aborted = (lambda: group.cancelled) if group is not None else None
        if not self._window.acquire(wait, aborted):
            if group is not None:
                group.window.release()
            if self._state is not SessionState.OPEN:
                raise SessionClosedError(f"the session is {self._state}; no new requests")
            return None
        now = time.monotonic()
        shape = getattr(image, "shape", (0, 0))
        width = int(shape[1]) if len(shape) > 1 else 0
        height = int(shape[0]) if shape else 0
        req = _Request(
            id=f"{self._id_prefix}-{next(self._ids)}",
            callback=callback,
            source=source,
            frame=frame,
            tag=tag,
            group=group,
            width=source_size[0] if source_size else width,
            height=source_size[1] if source_size else height,
            started=now,
            deadline=now + (self.timeout_s if timeout_s is None else timeout_s),
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
        )
        req.trace = self._tracing.begin(req.id, started, now, in_flight_before, self._window.size, read_span)
        with self._lock:
            closed = self._state is not SessionState.OPEN
            refused = closed or (group is not None and not group.admit())
            if not refused:
                self._pending[req.id] = req
        if refused:
            self._window.release()
            if group is not None:
                group.window.release()
            if closed:
                raise SessionClosedError(f"the session is {self._state}; no new requests")
            return None
        self.stats.record_sent()
        if self.send_in_caller:
            self._prepare_and_send(req, image)
        else:
            assert self._workers is not None
            self._workers.submit(self._prepare_and_send, req, image)
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
            raise WindowFullError(f"{self.max_in_flight} requests already in flight")
        future.add_done_callback(lambda f: f.cancelled() and self.cancel(request_id))
        return future

    def infer(self, image: np.ndarray, **kwargs: Any) -> InferenceResult:
        """Blocking convenience around future mode."""
        return self.submit_future(image, **kwargs).result()

    def cancel(self, request_id: str) -> bool:
        with self._lock:
            req = self._pending.get(request_id)
        if req is None:
            return False
        self._finish(req, Status.CANCELLED, "cancelled", kind=ErrorKind.CANCELLED)
        send = req.send
        # A batched call goes on for its other members; alone, the call is cancelled.
        if send is not None and send.call is not None and all(m.finished for m in send.members):
            send.call.cancel()
        return True

    def cancel_all(self) -> int:
        with self._lock:
            ids = list(self._pending)
        return sum(self.cancel(rid) for rid in ids)

    # -- the request's path (worker threads) -----------------------------------------
    def _prepare_and_send(self, req: _Request, image: np.ndarray) -> None:
        if req.finished:
            return
        t0 = time.monotonic()
        try:
            tensor, req.transform = preprocess(image, self.profile)
            if (req.width, req.height) != (req.transform.src_w, req.transform.src_h):
                req.transform = FromReducedSource(req.transform, req.width, req.height)
            pixels = req.transform.dst_w * req.transform.dst_h
            if pixels > MAX_INPUT_PIXELS:
                message = (
                    f"{req.source or 'image'}: too large to send ({req.transform.dst_w} x "
                    f"{req.transform.dst_h} = {pixels / 1e6:.0f} MP; at most {MAX_INPUT_PIXELS / 1e6:.0f} MP)"
                )
                self._finish(req, Status.FAILED, message, kind=ErrorKind.TOO_LARGE)
                return
        except Exception as e:
            message = f"{req.source or 'image'}: cannot prepare the input: {e}"
            self._finish(req, Status.FAILED, message, kind=ErrorKind.BAD_INPUT)
            return
        req.prepared = time.monotonic()
        req.preprocess_ms = (req.prepared - t0) * 1000
        req.tensor = tensor
        self._tracing.prepared(req, t0, req.prepared, tensor, self.profile.input_name)
        if self._batcher is not None:
            # Same shape and type only: one call carries one stacked tensor. Same timeout
            # too: the call's deadline is its earliest member's, so a request asked to wait
            # 5 s never shares a call with one asked to give up after 50 ms.
            self._batcher.add((tensor.shape, tensor.dtype.str, req.timeout_s), req)
        else:
            self._dispatch([req])

    def _dispatch_from_timer(self, members: list[_Request]) -> None:
        # The timer thread: stacking and sending are a worker's job.
        try:
            assert self._workers is not None
            self._workers.submit(self._dispatch, members)
        except RuntimeError:  # closing: the pool is shut down
            for m in members:
                self._finish(m, Status.CANCELLED, "cancelled: the session closed", kind=ErrorKind.CANCELLED)

    def _dispatch(self, members: list[_Request]) -> None:
        # Read each tensor once: a member cancelled meanwhile drops its own.
        pairs = [(m, m.tensor) for m in members if not m.finished]
        ready = [(m, t) for m, t in pairs if t is not None]
        if not ready:
            return
        live = [m for m, _ in ready]
        tensor = ready[0][1] if len(ready) == 1 else np.concatenate([t for _, t in ready])
        send = _Send(live, tensor, deadline=min(m.deadline for m in live))
        for m in live:
            m.tensor, m.send = None, send  # the stacked copy is what travels now
        if self._batcher is not None:
            self._tracing.waited_for_batch(live, time.monotonic())
        self._send(send)

    def _live_members(self, send: _Send) -> list[_Request]:
        return [m for m in send.members if not m.finished]

    def _end_send(self, send: _Send, reusable: bool) -> None:
        """The send is over: its buffers go back to the transport (once)."""
        with self._lock:
            if send.ended:
                return
            send.ended = True
        if send.lease is not None and self.transport is not None:
            self.transport.release(send.lease, reusable)

    def _fail_send(self, send: _Send, status: Status, message: str, kind: ErrorKind) -> None:
        for m in self._live_members(send):
            self._finish(m, status, message, kind=kind)

    def _send(self, send: _Send) -> None:
        if not self._live_members(send):
            self._end_send(send, reusable=send.call is None)
            return
        remaining = send.deadline - time.monotonic()
        if remaining <= 0:
            elapsed = (time.monotonic() - send.members[0].started) * 1000
            self._fail_send(
                send, Status.TIMEOUT, f"timed out after {elapsed:.0f} ms before sending", ErrorKind.TIMEOUT
            )
            self._end_send(send, reusable=send.call is None)
            return
        assert self._pool is not None and self.info is not None and self.transport is not None
        channel, why = self._pool.acquire(give_up_after_s=self.timeout_s)
        if channel is None:
            self._fail_send(send, Status.FAILED, why, ErrorKind.UNREACHABLE)
            self._end_send(send, reusable=True)
            return
        try:
            if send.lease is None:
                writing = time.monotonic()
                send.lease = self.transport.prepare(send.tensor, len(send.members))
                self._tracing.wrote(send.members, self.transport.kind, writing, time.monotonic())
        except Exception as e:
            self._pool.release(channel)
            self._fail_send(send, Status.FAILED, f"cannot attach the input: {e}", ErrorKind.BAD_INPUT)
            self._end_send(send, reusable=True)
            return
        send.channel, send.attempts = channel, send.attempts + 1
        send.sent_at = time.monotonic()
        if send.attempts > 1:
            self._tracing.stage(send.members, RETRY_WAIT, send.answered_at, send.sent_at)
        try:
            send.call = channel.send(
                model_name=self.info.name,
                model_version=self.model_version,
                inputs=send.lease.inputs,
                outputs=send.lease.outputs,
                request_id=send.id,
                client_timeout=remaining,
                headers=self._tracing.headers(send.members, self._headers or None),
                on_done=functools.partial(self._on_reply, send, channel),
            )
            self._tracing.stage(send.members, SEND, send.sent_at, time.monotonic())
        except Exception as e:  # e.g. the channel was closed under us
            self._pool.release(channel)
            failure = classify_failure(e, channel.url, self._secrets)
            self._fail_send(send, failure.status, failure.message, failure.kind)
            self._end_send(send, reusable=True)

    def _on_reply(
        self, send: _Send, channel: Channel, result: Reply | None = None, error: Any = None
    ) -> None:
        # gRPC's thread: hand off only. Exceptions here would be swallowed by gRPC.
        try:
            assert self._pool is not None and self._workers is not None
            self._pool.release(channel)
            if error is None:
                # Answered: no longer in flight. The next request need not wait for this
                # one's decoding (a worker's queue) to take its place.
                for member in send.members:
                    self._release_slots(member)
            self._workers.submit(self._complete, send, channel, result, error, time.monotonic())
        except Exception as e:  # pool shut down while closing
            self._fail_send(send, Status.CANCELLED, f"cancelled: {e}", ErrorKind.CANCELLED)
            self._end_send(send, reusable=False)

    def _complete(
        self, send: _Send, channel: Channel, result: Reply | None, error: Any, answered: float
    ) -> None:
        assert self._pool is not None and self.transport is not None
        send.answered_at = answered
        if error is not None or result is None:
            failure = classify_failure(error, channel.url, self._secrets)
            if failure.regions_lost:
                self._pool.mark_ok(channel.url)  # it answered
                self.transport.server_restarted()
                if self._live_members(send) and self._retry(send):
                    self._tracing.retried(send.members, send.sent_at, answered, failure.status)
                    return
            elif failure.transient:
                if failure.kind is ErrorKind.UNREACHABLE:
                    self._pool.mark_unreachable(channel.url, failure.message)
                else:
                    self._pool.mark_ok(channel.url)  # it answered: a passing state of the server
                if self._live_members(send) and self._retry(send):
                    self._tracing.retried(send.members, send.sent_at, answered, failure.status)
                    return
            elif failure.kind not in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT):
                self._pool.mark_ok(channel.url)  # the server answered, with an error
            self._tracing.answered(send.members, send.sent_at, answered)
            self._fail_send(send, failure.status, failure.message, failure.kind)
            # The server answered (an error), or never got it: its buffers are free again,
            # unless the call was cancelled or timed out (the server may still use them).
            self._end_send(send, reusable=failure.kind not in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT))
            return
        self._pool.mark_ok(channel.url)
        batch = len(send.members)
        reading = self._tracing.answered(send.members, send.sent_at, answered)
        try:
            # One check whatever the transport: first on what the reply says it carries
            # (before anything is copied), then on what was read, before decoding.
            assert send.lease is not None and self._output_check is not None
            declared = declared_outputs(result)
            if declared is not None:
                self._output_check.check(declared, batch)
            outputs = self.transport.outputs_of(send.lease, result)
            self._output_check.check(describe_arrays(outputs), batch)
            self._tracing.stage(send.members, READ_OUTPUTS, reading, time.monotonic())
        except OutputError as e:
            self._end_send(send, reusable=True)
            self._fail_send(send, Status.FAILED, str(e), e.kind)
            return
        except Exception as e:
            self._end_send(send, reusable=True)
            self._fail_send(send, Status.FAILED, f"cannot read the model's output: {e}", ErrorKind.SERVER)
            return
        self._end_send(send, reusable=True)
        round_trip_ms = (answered - send.sent_at) * 1000
        for i, member in enumerate(send.members):
            if member.finished:
                continue
            mine = outputs if batch == 1 else {k: v[i : i + 1] for k, v in outputs.items()}
            self._decode(member, mine, send, round_trip_ms, batch)

    def _decode(
        self, req: _Request, outputs: dict[str, np.ndarray], send: _Send, round_trip_ms: float, batch: int
    ) -> None:
        t0 = time.monotonic()
        try:
            assert req.transform is not None
            decoded = decode_outputs(outputs, self.profile, req.transform)
        except Exception as e:
            message = f"{req.source or 'image'}: cannot decode the model's output: {e}"
            self._finish(req, Status.FAILED, message, kind=ErrorKind.SERVER)
            return
        decoded_at = time.monotonic()
        self._tracing.stage((req,), DECODE, t0, decoded_at)
        timing = RequestTiming(
            preprocess_ms=req.preprocess_ms,
            wait_ms=max(0.0, (send.sent_at - req.prepared) * 1000),
            round_trip_ms=round_trip_ms,
            postprocess_ms=(decoded_at - t0) * 1000,
            batch=batch,
        )
        self._finish(req, Status.OK, None, decoded.detections, timing=timing, decoded=decoded)

    def _retry(self, send: _Send) -> bool:
        """Transient failure: try again after a back-off, while the send's deadline allows."""
        if self._state is not SessionState.OPEN:
            return False
        if self.retries is not None and send.attempts > self.retries:
            return False
        delay = min(self.retry_backoff_s * 2 ** (send.attempts - 1), MAX_RETRY_BACKOFF_S)
        if time.monotonic() + delay >= send.deadline:
            return False
        assert self._timer is not None and self._workers is not None
        workers = self._workers
        send.call = None

        def again() -> None:
            if self._state is SessionState.OPEN:
                try:
                    workers.submit(self._send, send)
                    return
                except RuntimeError:
                    pass
            message = "cancelled: the session closed during a retry back-off"
            self._fail_send(send, Status.CANCELLED, message, ErrorKind.CANCELLED)
            self._end_send(send, reusable=True)

        if not self._timer.call_later(delay, again):
            return False
        self.stats.record_retry()
        return True

    @staticmethod
    def _elapsed_ms(req: _Request) -> float:
        return (time.monotonic() - req.started) * 1000

    def _finish(
        self,
        req: _Request,
        status: Status,
        error: str | None,
        detections: list | None = None,
        *,
        kind: ErrorKind | None = None,
        timing: RequestTiming | None = None,
        decoded: DecodedOutputs | None = None,
    ) -> None:
        with self._lock:
            if req.finished:
                return
            req.finished = True
            self._pending.pop(req.id, None)
            if not self._pending:
                self._drained.notify_all()
        self._release_slots(req)
        latency = self._elapsed_ms(req)
        self.stats.record_done(status, latency, timing)
        send = req.send
        result = InferenceResult(
            request_id=req.id,
            status=status,
            source=req.source,
            frame=req.frame,
            error=None if error is None else redact(error, self._secrets),
            latency_ms=latency,
            width=req.width,
            height=req.height,
            detections=detections or [],
            masks=decoded.masks if decoded else None,
            classes=decoded.classes if decoded else None,
            dropped_invalid=decoded.dropped_invalid if decoded else 0,
            model=self.info.name if self.info else None,
            server=send.channel.url if send is not None and send.channel is not None else None,
            retries=max(0, send.attempts - 1) if send is not None else 0,
            error_kind=kind,
            timing=timing,
            tag=req.tag,
        )
        req.tensor = None  # free the tensor now, not when the caller drops the result
        handing = time.monotonic() if req.trace is not None else 0.0
        try:
            if req.group is not None:
                req.group.hand_on(result, req.callback)  # counted, handed on, then maybe drained
            else:
                try:
                    req.callback(result)
                except Exception:
                    log.exception("result callback failed for request %s", req.id)
        finally:
            if req.trace is not None:
                self._tracing.called_back(req, send, handing, time.monotonic())

    def _release_slots(self, req: _Request) -> None:
        """Give back the request's places in the windows (once): when its reply arrives, or
        when it ends without one."""
        with self._lock:
            if not req.holds_slots:
                return
            req.holds_slots = False
        self._window.release()
        if req.group is not None:
            req.group.window.release()
