"""`TritonSession`: asynchronous detection requests to one or more Triton servers.

Threads, and why:
- `submit()` may be called from any thread. It only takes a slot in the in-flight
  window (backpressure) and queues the request on the worker pool.
- Worker pool (`decode_workers` threads): pre-processing, sending (`async_infer`),
  decoding + NMS, and user callbacks. Heavy numpy work never runs on a gRPC thread
  or on the caller's (GUI) thread.
- gRPC's channel threads run `_on_reply`, which only hands off to the pool: a slow
  callback there would delay every other reply on the channel.
- One timer thread runs retry back-offs.
Every request ends exactly once (`_finish` is guarded): ok, error, timeout or cancelled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

from app.inference.connection import Channel, ConnectionOptions, ConnectionPool
from app.inference.discovery import ModelEntry, ModelInfo, check_live, choose_model, list_models, model_info
from app.inference.errors import SessionClosedError, SessionError, WindowFullError, classify, redact
from app.inference.letterbox import BoxTransform
from app.inference.profile import DecodedOutputs, ModelProfile, decode_outputs, preprocess
from app.inference.result import InferenceResult, Status
from app.inference.scheduler import DelayedCalls
from app.inference.stats import RequestStats

log = logging.getLogger(__name__)

ResultCallback = Callable[[InferenceResult], None]


@dataclass(eq=False)
class _Request:
    id: str
    callback: ResultCallback
    source: str | None
    frame: int | None
    tag: Any
    width: int
    height: int
    started: float
    deadline: float
    attempts: int = 0
    finished: bool = False
    channel: Channel | None = None
    call: Any = None  # tritonclient CallContext of the attempt in flight
    inputs: list[Any] = field(default_factory=list)
    transform: BoxTransform | None = None


class TritonSession:
    """Lifecycle: unopened -> open() -> close(). close() is idempotent; `with` works."""

    def __init__(
        self,
        urls: Sequence[str] | str,
        model: str | None = None,
        *,
        options: ConnectionOptions | None = None,
        profile_overrides: dict[str, Any] | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
        retry_backoff_s: float = 0.05,
        max_in_flight: int = 64,
        decode_workers: int = 2,
        send_in_caller: bool = False,
    ) -> None:
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise ValueError("at least one server URL is needed")
        self.requested_model = model
        self.options = options or ConnectionOptions()
        self.profile_overrides = profile_overrides
        self.timeout_s = timeout_s
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.max_in_flight = max_in_flight
        self.decode_workers = decode_workers
        # True: submit() pre-processes and sends on the caller's thread, saving a thread hop
        # per request (~0.2 ms of CPU). For callers that may block (the command line); the
        # GUI keeps the default so its thread never does numpy work or touches the network.
        self.send_in_caller = send_in_caller
        self.stats = RequestStats()
        self.state = "unopened"
        self.info: ModelInfo | None = None
        self.models: list[ModelEntry] = []
        self._headers = dict(self.options.headers)
        self._secrets = list(self._headers.values())
        self._lock = threading.Lock()
        self._drained = threading.Condition(self._lock)
        self._pending: dict[str, _Request] = {}
        self._window = threading.BoundedSemaphore(max_in_flight)
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:6]
        self._pool: ConnectionPool | None = None
        self._requested_outputs: list[Any] = []
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self._timer: DelayedCalls | None = None

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> TritonSession:
        return self.open()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> TritonSession:
        """Connect, check health, discover the model and its profile. Raises SessionError.

        close() from another thread while this runs closes the channels, so the call in
        progress fails at once (a GUI closing during a slow connect does not wait for it).
        """
        with self._lock:
            if self.state != "unopened":
                raise SessionError(f"a session can be opened once (it is {self.state})")
            self.state = "opening"
            pool = self._pool = ConnectionPool(self.urls, self.options)
        try:
            live = self._check_servers(pool)
            first = pool.first_channel(live[0])
            self.models = list_models(first.client, first.url, self._headers, self.timeout_s)
            name = choose_model(self.models, self.requested_model, first.url)
            self.info = model_info(
                first.client, first.url, name, self._headers, self.profile_overrides, self.timeout_s
            )
            self._check_model_everywhere(pool, live, name)
            with self._lock:
                if self.state != "opening":
                    raise SessionClosedError("the session was closed while connecting")
                self._requested_outputs = [
                    grpcclient.InferRequestedOutput(n) for n in self.profile.output_names
                ]
                # Why threads here: decoding is numpy/OpenCV work that must stay off gRPC's threads.
                self._workers = concurrent.futures.ThreadPoolExecutor(self.decode_workers, "triton-worker")
                self._timer = DelayedCalls()
                self.stats.reset()
                self.state = "open"
        except BaseException as e:
            pool.close()
            with self._lock:
                closed_meanwhile = self.state != "opening"
                self.state = "closed"
            if closed_meanwhile and not isinstance(e, SessionClosedError):
                raise SessionClosedError("the session was closed while connecting") from None
            raise
        return self

    def _check_servers(self, pool: ConnectionPool) -> list[str]:
        live, errors = [], []
        for url in pool.urls:
            channel = pool.first_channel(url)
            try:
                check_live(channel.client, url, self._headers, min(self.timeout_s, 5.0))
                live.append(url)
            except SessionError as e:
                errors.append(str(e))
                pool.mark_unreachable(url, str(e))
        if not live:
            raise SessionError("; ".join(errors))
        for message in errors:
            log.warning("%s (using the other servers)", message)
        return live

    def _check_model_everywhere(self, pool: ConnectionPool, live: list[str], name: str) -> None:
        for url in live[1:]:
            channel = pool.first_channel(url)
            choose_model(list_models(channel.client, url, self._headers, self.timeout_s), name, url)

    @property
    def profile(self) -> ModelProfile:
        if self.info is None:
            raise SessionError("the session is not open")
        return self.info.profile

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._pending)

    def close(self, drain_timeout: float = 2.0) -> None:
        """Stop accepting; let in-flight requests finish for up to `drain_timeout` s; cancel the rest."""
        with self._lock:
            if self.state in ("closing", "closed"):
                return
            interrupting_open, was_open = self.state == "opening", self.state == "open"
            self.state = "closing"
            deadline = time.monotonic() + drain_timeout
            while self._pending and was_open:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._drained.wait(remaining)
        if interrupting_open and self._pool is not None:
            # open() is blocked on the network in another thread: closing the channels
            # makes that call fail now; open() then cleans up and reports the close.
            self._pool.close()
            return
        self.cancel_all()
        if self._timer is not None:
            for call in self._timer.stop():
                call()  # each ends its request (cancelled) now that we are closing
        if self._workers is not None:
            self._workers.shutdown(wait=True)
        if self._pool is not None:
            self._pool.close()
        self.state = "closed"

    # -- submitting -----------------------------------------------------------------
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
    ) -> str | None:
        """Queue one RGB uint8 image; `callback(result)` is called exactly once, on a worker thread.

        Returns the request id, or None when the in-flight window is full and `block`
        is False (live sources drop that frame) or `wait_s` passed.
        """
        if self.state != "open":
            raise SessionClosedError(f"the session is {self.state}; no new requests")
        if not self._window.acquire(blocking=block, timeout=wait_s if block else None):
            return None
        now = time.monotonic()
        shape = getattr(image, "shape", (0, 0))
        req = _Request(
            id=f"{self._id_prefix}-{next(self._ids)}",
            callback=callback,
            source=source,
            frame=frame,
            tag=tag,
            width=int(shape[1]) if len(shape) > 1 else 0,
            height=int(shape[0]) if shape else 0,
            started=now,
            deadline=now + (self.timeout_s if timeout_s is None else timeout_s),
        )
        with self._lock:
            if self.state != "open":
                self._window.release()
                raise SessionClosedError(f"the session is {self.state}; no new requests")
            self._pending[req.id] = req
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
        future.add_done_callback(lambda f: f.cancelled() and request_id and self.cancel(request_id))
        return future

    def infer(self, image: np.ndarray, **kwargs: Any) -> InferenceResult:
        """Blocking convenience around future mode."""
        return self.submit_future(image, **kwargs).result()

    async def infer_async(self, image: np.ndarray, **kwargs: Any) -> InferenceResult:
        """Awaitable for an asyncio loop (qasync in the viewer). Never blocks the loop:
        when the window is full, the wait for a slot happens on an executor thread."""
        loop = asyncio.get_running_loop()
        try:
            future = self.submit_future(image, block=False, **kwargs)
        except WindowFullError:
            future = await loop.run_in_executor(None, functools.partial(self.submit_future, image, **kwargs))
        return await asyncio.wrap_future(future)

    def cancel(self, request_id: str) -> bool:
        with self._lock:
            req = self._pending.get(request_id)
        if req is None:
            return False
        call = req.call
        self._finish(req, Status.CANCELLED, "cancelled")
        if call is not None:
            call.cancel()
        return True

    def cancel_all(self) -> int:
        with self._lock:
            ids = list(self._pending)
        return sum(self.cancel(rid) for rid in ids)

    # -- the request's path (worker threads) -----------------------------------------
    def _prepare_and_send(self, req: _Request, image: np.ndarray) -> None:
        if req.finished:
            return
        try:
            profile = self.profile
            tensor, req.transform = preprocess(image, profile)
            inp = grpcclient.InferInput(profile.input_name, list(tensor.shape), profile.input_dtype)
            inp.set_data_from_numpy(tensor)
            req.inputs = [inp]
        except Exception as e:
            self._finish(req, Status.ERROR, f"{req.source or 'image'}: cannot prepare the input: {e}")
            return
        self._send(req)

    def _send(self, req: _Request) -> None:
        if req.finished:
            return
        remaining = req.deadline - time.monotonic()
        if remaining <= 0:
            self._finish(
                req, Status.TIMEOUT, f"timed out after {self._elapsed_ms(req):.0f} ms before sending"
            )
            return
        assert self._pool is not None and self.info is not None
        channel, why = self._pool.acquire(give_up_after_s=self.timeout_s)
        if channel is None:
            self._finish(req, Status.ERROR, why)
            return
        req.channel, req.attempts = channel, req.attempts + 1
        try:
            req.call = channel.send(
                model_name=self.info.name,
                inputs=req.inputs,
                outputs=self._requested_outputs,
                request_id=req.id,
                client_timeout=remaining,
                headers=self._headers or None,
                on_done=functools.partial(self._on_reply, req, channel),
            )
        except Exception as e:  # e.g. the channel was closed under us
            self._pool.release(channel)
            self._finish(req, *self._failure(e, channel.url))

    def _on_reply(self, req: _Request, channel: Channel, result: Any = None, error: Any = None) -> None:
        # gRPC's thread: hand off only. Exceptions here would be swallowed by gRPC.
        try:
            assert self._pool is not None and self._workers is not None
            self._pool.release(channel)
            self._workers.submit(self._complete, req, channel, result, error)
        except Exception as e:  # pool shut down while closing
            self._finish(req, Status.CANCELLED, f"cancelled: {e}")

    def _complete(self, req: _Request, channel: Channel, result: Any, error: Any) -> None:
        if req.finished:
            return
        assert self._pool is not None
        if error is not None:
            failure = classify(error, channel.url, self._secrets)
            if failure.transient:
                self._pool.mark_unreachable(channel.url, failure.message)
                if self._retry(req):
                    return
            self._finish(req, failure.status, failure.message)
            return
        self._pool.mark_ok(channel.url)
        try:
            profile = self.profile
            outputs = {name: result.as_numpy(name) for name in profile.output_names}
            assert req.transform is not None
            decoded = decode_outputs(outputs, profile, req.transform)
        except Exception as e:
            self._finish(req, Status.ERROR, f"{req.source or 'image'}: cannot decode the model's output: {e}")
            return
        self._finish(req, Status.OK, None, decoded.detections, decoded)

    def _retry(self, req: _Request) -> bool:
        """Transient failure: try again after a back-off, if attempts and time remain."""
        if req.attempts > self.retries or self.state != "open":
            return False
        delay = self.retry_backoff_s * 2 ** (req.attempts - 1)
        if time.monotonic() + delay >= req.deadline:
            return False
        assert self._timer is not None and self._workers is not None
        workers = self._workers

        def again() -> None:
            if self.state == "open":
                try:
                    workers.submit(self._send, req)
                    return
                except RuntimeError:
                    pass
            self._finish(req, Status.CANCELLED, "cancelled: the session closed during a retry back-off")

        if not self._timer.call_later(delay, again):
            return False
        self.stats.record_retry()
        return True

    def _failure(self, error: BaseException, url: str) -> tuple[Status, str]:
        failure = classify(error, url, self._secrets)
        return failure.status, failure.message

    @staticmethod
    def _elapsed_ms(req: _Request) -> float:
        return (time.monotonic() - req.started) * 1000

    def _finish(
        self,
        req: _Request,
        status: Status,
        error: str | None,
        detections: list | None = None,
        decoded: DecodedOutputs | None = None,
    ) -> None:
        with self._lock:
            if req.finished:
                return
            req.finished = True
            self._pending.pop(req.id, None)
            if not self._pending:
                self._drained.notify_all()
        self._window.release()
        latency = self._elapsed_ms(req)
        self.stats.record_done(status, latency)
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
            model=self.info.name if self.info else None,
            server=req.channel.url if req.channel else None,
            retries=max(0, req.attempts - 1),
            tag=req.tag,
        )
        req.inputs, req.call = [], None  # free the tensor now, not when the caller drops the result
        try:
            req.callback(result)
        except Exception:
            log.exception("result callback failed for request %s", req.id)
