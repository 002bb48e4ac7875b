"""RequestGroup: the requests of one job (a batch, a live stream, a benchmark level): its
in-flight limit, its cancel, how its inputs ended, and one "drained" signal when the job's
last result has been handed on.

This module never imports the session (the session imports it): what a group needs from
the session that made it is the `RequestSender` protocol below, and the session reports
each request's admission and result through the group's public `admit` and `hand_on`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from app.inference.core.tally import StatusCounts
from app.inference.core.window import Window

if TYPE_CHECKING:
    import numpy as np

    from app.inference.result import InferenceResult

log = logging.getLogger(__name__)

ResultCallback = Callable[["InferenceResult"], None]


class RequestSender(Protocol):
    """What a group asks of its session (TritonSession implements it)."""

    # submit(image, callback, *, group=..., <TritonSession.submit's other keywords>) -> id | None
    @property
    def submit(self) -> Callable[..., str | None]: ...

    def cancel_group(self, group: RequestGroup) -> int: ...


class RequestGroup:
    """A job's own in-flight limit, cancel and completion, on a shared session.

    Completion: every input of the job ends once, as a request's result or as a result
    made here (`deliver_local`: an unreadable file...), counted by status in `counts`.
    Once the job has said it sends nothing more (`close()`) and the last result has been
    handed on, `on_drained` is called exactly once, on the thread that handed that result
    on (or in `close()` when nothing was left), and `wait_drained()` returns.

    The session admits each request here under its own lock before the request can
    possibly finish, so no caller has to handle "finished before its id was known". A
    cancelled (or closed) group takes no new request: waiting submitters return at once.
    """

    def __init__(
        self,
        sender: RequestSender,
        limit: int,
        name: str = "",
        on_drained: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.window = Window(limit)
        self._sender = sender
        self._on_drained = on_drained
        # Taken after the session's lock (never before it): see TritonSession.submit.
        self._lock = threading.Lock()
        self._counts = StatusCounts()
        self._unfinished = 0  # admitted, result not handed on yet
        self._local = 0  # inputs that never became requests, handed on (deliver_local)
        self._cancelled = False
        self._closed = False
        self._drained = threading.Event()
        self._drained_called = False

    @property
    def limit(self) -> int:
        return self.window.size

    @limit.setter
    def limit(self, value: int) -> None:
        self.window.size = value  # applies at once (waiters re-check)

    @property
    def in_flight(self) -> int:
        """Requests holding a place in the group's window: sent and not answered yet."""
        return self.window.used

    @property
    def unfinished(self) -> int:
        """Requests whose result has not been handed on yet (answered ones still decoding too)."""
        return self._unfinished

    @property
    def counts(self) -> StatusCounts:
        """How the group's inputs ended so far (a result is counted as it ends, just before
        it is handed on)."""
        return self._counts

    @property
    def accounted(self) -> int:
        """Inputs of the job the group knows of: sent (whether ended or not), handed on without
        a request, or counted as never started. (One lock: an input is never counted twice or
        missed while it moves from sent to ended.)"""
        with self._lock:
            return self._counts.sent + self._local + self._counts.not_started

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def drained(self) -> bool:
        """Closed, and every result handed on (`on_drained` is called, or running now)."""
        return self._drained_called

    # -- the job's side ----------------------------------------------------------------------
    def submit(self, image: np.ndarray, callback: ResultCallback, **kwargs: Any) -> str | None:
        """`TritonSession.submit` within this group: None when not sent (cancelled, closed,
        or no slot in time)."""
        return self._sender.submit(image, callback, group=self, **kwargs)

    def deliver_local(self, result: InferenceResult, callback: ResultCallback) -> None:
        """An input that never became a request (unreadable, not media): counted with the
        others and handed on to `callback`, on this thread. Before `close()` only."""
        self._hand_on(result, callback, admitted=False)

    def count_not_started(self, n: int) -> None:
        """`n` inputs of the job will never be sent (it was cancelled first)."""
        if n:
            with self._lock:
                self._counts = self._counts.add_not_started(n)

    def close(self) -> None:
        """The job sends nothing more: drained follows once what is in flight has ended
        (at once when nothing is). Idempotent."""
        with self._lock:
            self._closed = True
        self.window.close()
        self._drain_if_done()

    def cancel(self) -> int:
        """Take nothing more, wake waiting submitters, cancel what is in flight (each of those
        still ends once, as cancelled). Returns how many were cancelled. Does not close:
        a job may still count what it never sent, then closes."""
        with self._lock:
            self._cancelled = True
        self.window.close()
        return self._sender.cancel_group(self)

    def wait_drained(self, timeout: float | None = None) -> bool:
        """Until the group is drained (True; `on_drained` has run) or `timeout` passed."""
        return self._drained.wait(timeout)

    # -- the session's side ------------------------------------------------------------------
    def admit(self) -> bool:
        """A request of this group is about to be sent (under the session's lock). False when
        the group takes no more."""
        with self._lock:
            if self._cancelled or self._closed:
                return False
            self._counts = self._counts.add_sent()
            self._unfinished += 1
            return True

    def hand_on(self, result: InferenceResult, callback: ResultCallback) -> None:
        """An admitted request has ended: counted, handed to `callback` (its exceptions are
        logged), then no longer unfinished; drained follows the last one after `close()`."""
        self._hand_on(result, callback, admitted=True)

    def _hand_on(self, result: InferenceResult, callback: ResultCallback, admitted: bool) -> None:
        with self._lock:
            self._counts = self._counts.add(result.status)
            if not admitted:
                self._local += 1
        try:
            callback(result)
        except Exception:
            log.exception("result callback failed for %s", result.request_id or result.source)
        finally:
            if admitted:
                with self._lock:
                    self._unfinished -= 1
                self._drain_if_done()

    def _drain_if_done(self) -> None:
        with self._lock:
            if not self._closed or self._unfinished or self._drained_called:
                return
            self._drained_called = True  # decided under the lock: exactly once
        try:
            if self._on_drained is not None:
                self._on_drained()
        except Exception:
            log.exception("drained callback of group %r failed", self.name)
        finally:
            self._drained.set()
