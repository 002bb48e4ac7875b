"""`RequestPath`: one request's way from the caller's image to its result, once the session
is open: prepare (pre-process), batch (client batching), send, retry, complete (check and
read the reply), decode, finish.

Threads, and why:
- Worker pool (the session's `decode_workers` threads): pre-processing, sending
  (`async_infer`), decoding + NMS, and user callbacks. Heavy numpy work never runs on a
  gRPC thread or on the caller's (GUI) thread; with the spec's `send_in_caller`, a caller
  that may block (the command line) prepares and sends on its own thread instead.
- gRPC's channel threads run `_on_reply`, which only hands off to the pool: a slow
  callback there would delay every other reply on the channel.
- The timer thread runs retry back-offs, the client batcher's delays and the attempt
  timeouts, and hands the work on to the pool.
An attempt that stays unanswered past its attempt timeout (a paused or wedged server) is
cancelled and the request sent again on a fresh call while its deadline lasts; of the
attempts of one send, only the first outcome taken counts (`_claim`): a late reply of an
attempt given up on is dropped.
Every request ends exactly once (`finish`, guarded by `InFlight.finish`): ok, failed,
timeout or cancelled.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from app.inference.core.attempt_timeout import AttemptTimeout
from app.inference.core.batcher import ClientBatcher
from app.inference.core.in_flight import InFlight
from app.inference.core.pool import ConnectionPool
from app.inference.core.request import PendingRequest, Send
from app.inference.core.scheduler import DelayedCalls
from app.inference.core.spec import SessionSpec
from app.inference.core.stats import RequestStats
from app.inference.core.trace_hooks import PathTracing
from app.inference.decoding.letterbox import FromReducedSource
from app.inference.errors import classify_failure, redact, status_code
from app.inference.introspection.discovery import ModelInfo
from app.inference.profiles.output_check import OutputCheck, OutputError, describe_arrays
from app.inference.profiles.profile import DecodedOutputs, decode_outputs, preprocess
from app.inference.result import ErrorKind, InferenceResult, RequestTiming, Status
from app.inference.tracing.spans import DECODE, READ_OUTPUTS, RETRY_WAIT, SEND
from app.inference.transports.channel import Channel, Reply
from app.inference.transports.transport import Lease, Transport, declared_outputs

log = logging.getLogger(__name__)

MAX_RETRY_BACKOFF_S = 0.5  # a server restarting is noticed within this long of being back
# The most pixels one image may have once prepared: above, a clear refusal instead of a server
# that allocates gigabytes (and keeps them). Raw-image models get a downscaled copy anyway.
MAX_INPUT_PIXELS = 64_000_000


class RequestPath:
    """Built by `TritonSession.open()` with what it found (the pool, the transport, the model)
    and the threads it started; `is_open()` says whether the session still takes work (a
    retry after it closed ends its request as cancelled)."""

    def __init__(
        self,
        spec: SessionSpec,
        in_flight: InFlight,
        stats: RequestStats,
        pool: ConnectionPool,
        transport: Transport,
        info: ModelInfo,
        workers: concurrent.futures.ThreadPoolExecutor,
        timer: DelayedCalls,
        batch: int,
        is_open: Callable[[], bool],
        tracing: PathTracing | None = None,
    ) -> None:
        self._spec = spec
        self._in_flight = in_flight
        self._stats = stats
        self._pool = pool
        self._transport = transport
        self._info = info
        self._workers = workers
        self._timer = timer
        self._is_open = is_open
        # The session's tracer's hooks: no-ops for untraced requests (trace_hooks.py).
        self._tracing = tracing or PathTracing()
        self._headers = dict(spec.connection.headers)
        self._secrets = spec.connection.secret_values()
        timeouts = spec.timeouts
        self.attempts = AttemptTimeout(timeouts.attempt_s, enabled=timeouts.resend_unanswered)
        # What every reply must carry.
        self._output_check = OutputCheck.of(
            info.profile, info.outputs, info.max_batch_size, spec.connection.max_output_bytes
        )
        # Client-side batching: up to `batch` prepared requests of one shape, or what arrived
        # within the spec's batch delay, go as one call.
        self._batcher: ClientBatcher[PendingRequest] | None = (
            ClientBatcher(
                batch, spec.delivery.batch_delay_ms / 1000, self._dispatch_from_timer, timer.call_later
            )
            if batch > 1
            else None
        )

    @property
    def batching(self) -> int:
        """Requests per call (1: client batching off or not possible with this model)."""
        return self._batcher.size if self._batcher is not None else 1

    def cancel(self, req: PendingRequest) -> None:
        self.finish(req, Status.CANCELLED, "cancelled", kind=ErrorKind.CANCELLED)
        send = req.send
        # A batched call goes on for its other members; alone, the call is cancelled.
        if send is not None and send.call is not None and all(m.finished for m in send.members):
            send.call.cancel()

    def close(self) -> None:
        """What waits in a batch was cancelled first (the session's close): nothing more is sent."""
        if self._batcher is not None:
            self._batcher.close()

    def prepare_and_send(self, req: PendingRequest, image: np.ndarray) -> None:
        if req.finished:
            return
        t0 = time.monotonic()
        try:
            tensor, req.transform = preprocess(image, self._info.profile)
            if (req.width, req.height) != (req.transform.src_w, req.transform.src_h):
                req.transform = FromReducedSource(req.transform, req.width, req.height)
            pixels = req.transform.dst_w * req.transform.dst_h
            if pixels > MAX_INPUT_PIXELS:
                message = (
                    f"{req.source or 'image'}: too large to send ({req.transform.dst_w} x "
                    f"{req.transform.dst_h} = {pixels / 1e6:.0f} MP; at most {MAX_INPUT_PIXELS / 1e6:.0f} MP)"
                )
                self.finish(req, Status.FAILED, message, kind=ErrorKind.TOO_LARGE)
                return
        except Exception as e:
            message = f"{req.source or 'image'}: cannot prepare the input: {e}"
            self.finish(req, Status.FAILED, message, kind=ErrorKind.BAD_INPUT)
            return
        req.prepared = time.monotonic()
        req.preprocess_ms = (req.prepared - t0) * 1000
        req.tensor = tensor
        self._tracing.prepared(req, t0, req.prepared, tensor, self._info.profile.input_name)
        if self._batcher is not None:
            # Same shape and type only: one call carries one stacked tensor. Same timeout
            # too: the call's deadline is its earliest member's, so a request asked to wait
            # 5 s never shares a call with one asked to give up after 50 ms.
            self._batcher.add((tensor.shape, tensor.dtype.str, req.timeout_s), req)
        else:
            self._dispatch([req])

    def _dispatch_from_timer(self, members: list[PendingRequest]) -> None:
        # The timer thread: stacking and sending are a worker's job.
        try:
            self._workers.submit(self._dispatch, members)
        except RuntimeError:  # closing: the pool is shut down
            for m in members:
                self.finish(m, Status.CANCELLED, "cancelled: the session closed", kind=ErrorKind.CANCELLED)

    def _dispatch(self, members: list[PendingRequest]) -> None:
        # Read each tensor once: a member cancelled meanwhile drops its own.
        pairs = [(m, m.tensor) for m in members if not m.finished]
        ready = [(m, t) for m, t in pairs if t is not None]
        if not ready:
            return
        live = [m for m, _ in ready]
        tensor = ready[0][1] if len(ready) == 1 else np.concatenate([t for _, t in ready])
        send = Send(live, tensor, deadline=min(m.deadline for m in live))
        for m in live:
            m.tensor, m.send = None, send  # the stacked copy is what travels now
        if self._batcher is not None:
            self._tracing.waited_for_batch(live, time.monotonic())
        self._send(send)

    def _end_send(self, send: Send, reusable: bool) -> None:
        """The send is over: its buffers go back to the transport (once)."""
        with self._in_flight.lock:
            if send.ended:
                return
            send.ended = True
        if send.lease is not None:
            # An attempt given up on unanswered may still be read or written by the server.
            self._transport.release(send.lease, reusable and not send.abandoned)

    def _claim(self, send: Send, attempt: int) -> bool:
        """Whether this outcome of attempt `attempt` (its reply, or its attempt timeout) is
        the one taken: once per attempt, and never for an attempt older than the last one
        taken (its reply came too late)."""
        with self._in_flight.lock:
            if send.claimed >= attempt:
                return False
            send.claimed = attempt
            return True

    def _fail_send(self, send: Send, status: Status, message: str, kind: ErrorKind) -> None:
        for m in send.live_members():
            self.finish(m, status, message, kind=kind)

    def _send(self, send: Send) -> None:
        if not send.live_members():
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
        channel, why = self._pool.acquire(give_up_after_s=self._spec.timeouts.request_s)
        if channel is None:
            self._fail_send(send, Status.FAILED, why, ErrorKind.UNREACHABLE)
            self._end_send(send, reusable=True)
            return
        try:
            if send.lease is None:
                writing = time.monotonic()
                send.lease = self._transport.prepare(send.tensor, len(send.members))
                self._tracing.wrote(send.members, self._transport.kind, writing, time.monotonic())
        except Exception as e:
            self._pool.release(channel)
            self._fail_send(send, Status.FAILED, f"cannot attach the input: {e}", ErrorKind.BAD_INPUT)
            self._end_send(send, reusable=True)
            return
        send.channel, send.attempts = channel, send.attempts + 1
        attempt = send.attempts
        send.sent_at = time.monotonic()
        if send.attempts > 1:
            self._tracing.stage(send.members, RETRY_WAIT, send.answered_at, send.sent_at)
        try:
            send.call = channel.send(
                model_name=self._info.name,
                model_version=self._spec.version,
                inputs=send.lease.inputs,
                outputs=send.lease.outputs,
                request_id=send.id,
                client_timeout=remaining,
                headers=self._tracing.headers(send.members, self._headers or None),
                on_done=functools.partial(self._on_reply, send, channel, attempt),
            )
            self._tracing.stage(send.members, SEND, send.sent_at, time.monotonic())
            self._watch(send, attempt, remaining)
        except Exception as e:  # e.g. the channel was closed under us
            self._pool.release(channel)
            failure = classify_failure(e, channel.endpoint, self._secrets)
            self._fail_send(send, failure.status, failure.message, failure.kind)
            self._end_send(send, reusable=True)

    def _watch(self, send: Send, attempt: int, remaining: float) -> None:
        """Give the attempt up if it is not answered within its attempt timeout (when the
        deadline leaves room for another attempt after it)."""
        retries = self._spec.timeouts.retries
        limit = self.attempts.limit(attempt)
        if limit is None or limit >= remaining or (retries is not None and attempt > retries):
            return
        # A weak reference: a send answered long before its timer fires (nearly all of them)
        # is freed with its tensor then, not held by the timer for the whole attempt timeout.
        self._timer.call_later(limit, functools.partial(self._overdue, weakref.ref(send), attempt))

    def _overdue(self, sending: weakref.ref[Send], attempt: int) -> None:
        # The timer thread: cancel the unanswered attempt, hand the new one to a worker.
        send = sending()
        if send is None or not self._is_open() or not send.live_members() or not self._claim(send, attempt):
            return  # answered, ended, or closing (close() cancels what is left)
        now = time.monotonic()
        with self._in_flight.lock:
            send.abandoned += 1
            call, send.call = send.call, None
        if call is not None:
            try:
                call.cancel()  # its callback comes back late, and is dropped (`_claim`)
            except Exception:
                log.debug("cancelling an unanswered attempt of %s failed", send.id, exc_info=True)
        self._stats.record_retry()
        self._tracing.retried(send.members, send.sent_at, now, "unanswered")
        send.answered_at = now
        try:
            self._workers.submit(self._send, send)
        except RuntimeError:  # closing: the pool is shut down
            self._fail_send(send, Status.CANCELLED, "cancelled: the session closed", ErrorKind.CANCELLED)
            self._end_send(send, reusable=False)

    def _on_reply(
        self, send: Send, channel: Channel, attempt: int, result: Reply | None = None, error: Any = None
    ) -> None:
        # gRPC's thread: hand off only. Exceptions here would be swallowed by gRPC.
        try:
            self._pool.release(channel)
            if not self._claim(send, attempt):
                return  # an attempt given up on answered after all: the request went on without it
            if error is None:
                # Answered: no longer in flight. The next request need not wait for this
                # one's decoding (a worker's queue) to take its place.
                for member in send.members:
                    self._in_flight.release_slots(member)
            self._workers.submit(self._complete, send, channel, result, error, time.monotonic())
        except Exception as e:  # pool shut down while closing
            self._fail_send(send, Status.CANCELLED, f"cancelled: {e}", ErrorKind.CANCELLED)
            self._end_send(send, reusable=False)

    def _complete(
        self, send: Send, channel: Channel, result: Reply | None, error: Any, answered: float
    ) -> None:
        send.answered_at = answered
        if error is not None or result is None:
            failure = classify_failure(error, channel.endpoint, self._secrets)
            if failure.regions_lost:
                self._pool.mark_ok(channel.endpoint)  # it answered
                self._transport.server_restarted()
                if send.live_members() and self._retry(send):
                    self._tracing.retried(
                        send.members, send.sent_at, answered, status_code(error) or failure.kind
                    )
                    return
            elif failure.transient:
                if failure.kind is ErrorKind.UNREACHABLE:
                    self._pool.mark_unreachable(channel.endpoint, failure.message)
                else:
                    self._pool.mark_ok(channel.endpoint)  # it answered: a passing state of the server
                if send.live_members() and self._retry(send):
                    self._tracing.retried(
                        send.members, send.sent_at, answered, status_code(error) or failure.kind
                    )
                    return
            elif failure.kind not in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT):
                self._pool.mark_ok(channel.endpoint)  # the server answered, with an error
            self._tracing.answered(send.members, send.sent_at, answered)
            self._fail_send(send, failure.status, failure.message, failure.kind)
            # The server answered (an error), or never got it: its buffers are free again,
            # unless the call was cancelled or timed out (the server may still use them).
            self._end_send(send, reusable=failure.kind not in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT))
            return
        self._pool.mark_ok(channel.endpoint)
        self.attempts.observe(answered - send.sent_at)
        batch = len(send.members)
        reading = self._tracing.answered(send.members, send.sent_at, answered)
        try:
            assert send.lease is not None and self._output_check is not None
            outputs = checked_outputs(self._transport, self._output_check, send.lease, result, batch)
            self._tracing.stage(send.members, READ_OUTPUTS, reading, time.monotonic())
        except OutputError as e:
            # Outputs left out are what a server crashing mid-answer sends (a Python backend's
            # stub dying, then SIGABRT): asked once more, then failed naming them.
            if e.incomplete and send.attempts == 1 and send.live_members() and self._retry(send):
                self._tracing.retried(send.members, send.sent_at, answered, "incomplete reply")
                return
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
        self,
        req: PendingRequest,
        outputs: dict[str, np.ndarray],
        send: Send,
        round_trip_ms: float,
        batch: int,
    ) -> None:
        t0 = time.monotonic()
        try:
            assert req.transform is not None
            decoded = decode_outputs(outputs, self._info.profile, req.transform)
        except Exception as e:
            message = f"{req.source or 'image'}: cannot decode the model's output: {e}"
            self.finish(req, Status.FAILED, message, kind=ErrorKind.SERVER)
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
        self.finish(req, Status.OK, None, decoded.detections, timing=timing, decoded=decoded)

    def _retry(self, send: Send) -> bool:
        """Transient failure: try again after a back-off, while the send's deadline allows."""
        if not self._is_open():
            return False
        retries = self._spec.timeouts.retries
        if retries is not None and send.attempts > retries:
            return False
        delay = min(self._spec.timeouts.retry_backoff_s * 2 ** (send.attempts - 1), MAX_RETRY_BACKOFF_S)
        if time.monotonic() + delay >= send.deadline:
            return False
        workers = self._workers
        send.call = None

        def again() -> None:
            if self._is_open():
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
        self._stats.record_retry()
        return True

    @staticmethod
    def _elapsed_ms(req: PendingRequest) -> float:
        return (time.monotonic() - req.started) * 1000

    def finish(
        self,
        req: PendingRequest,
        status: Status,
        error: str | None,
        detections: list | None = None,
        *,
        kind: ErrorKind | None = None,
        timing: RequestTiming | None = None,
        decoded: DecodedOutputs | None = None,
    ) -> None:
        if not self._in_flight.finish(req):
            return  # ended already: every request ends exactly once
        self._in_flight.release_slots(req)
        latency = self._elapsed_ms(req)
        self._stats.record_done(status, latency, timing)
        send = req.send
        error = None if error is None else redact(error, self._secrets)
        result = result_of(req, status, error, detections, latency, self._info.name, kind, timing, decoded)
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


def checked_outputs(
    transport: Transport, check: OutputCheck, lease: Lease, reply: Reply, batch: int
) -> dict[str, np.ndarray]:
    """The reply's outputs, checked whatever the transport: first on what the reply says it
    carries (before anything is copied), then on what was read, before decoding."""
    declared = declared_outputs(reply)
    if declared is not None:
        check.check(declared, batch)
    outputs = transport.outputs_of(lease, reply)
    check.check(describe_arrays(outputs), batch)
    return outputs


def result_of(
    req: PendingRequest,
    status: Status,
    error: str | None,
    detections: list | None,
    latency_ms: float,
    model: str,
    kind: ErrorKind | None,
    timing: RequestTiming | None,
    decoded: DecodedOutputs | None,
) -> InferenceResult:
    """The result a request ends with (`error` already redacted)."""
    send = req.send
    return InferenceResult(
        request_id=req.id,
        status=status,
        source=req.source,
        frame=req.frame,
        error=error,
        latency_ms=latency_ms,
        width=req.width,
        height=req.height,
        detections=detections or [],
        masks=decoded.masks if decoded else None,
        classes=decoded.classes if decoded else None,
        dropped_invalid=decoded.dropped_invalid if decoded else 0,
        model=model,
        server=send.channel.endpoint.url if send is not None and send.channel is not None else None,
        retries=max(0, send.attempts - 1) if send is not None else 0,
        error_kind=kind,
        timing=timing,
        tag=req.tag,
    )
