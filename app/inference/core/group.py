"""RequestGroup: the requests of one job (a batch, a live stream, a benchmark level)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.inference.core.window import Window

if TYPE_CHECKING:
    import numpy as np

    from app.inference.core.session import TritonSession
    from app.inference.result import InferenceResult


class RequestGroup:
    """A job's own in-flight limit and its own cancel, on a shared session.

    The session registers each request here under its own lock before the request can
    possibly finish, so no caller has to handle "finished before its id was known".
    A cancelled group takes no new request: waiting submitters return at once.
    """

    def __init__(self, session: TritonSession, limit: int, name: str = "") -> None:
        self.name = name
        self.window = Window(limit)
        self._session = session
        # Taken after the session's lock (never before it): see TritonSession.submit/_finish.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._ids: set[str] = set()
        self._cancelled = False

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
        with self._lock:
            return len(self._ids)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def submit(
        self, image: np.ndarray, callback: Callable[[InferenceResult], None], **kwargs: Any
    ) -> str | None:
        """`TritonSession.submit` within this group: None when not sent (cancelled, or no slot
        in time)."""
        return self._session.submit(image, callback, group=self, **kwargs)

    def cancel(self) -> int:
        """Take nothing more, wake waiting submitters, cancel what is in flight (each of those
        still ends once, as cancelled). Returns how many were cancelled."""
        with self._lock:
            self._cancelled = True
            ids = list(self._ids)
        self.window.close()
        self._session.wake_waiters()
        return sum(self._session.cancel(rid) for rid in ids)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Until every request of the group has handed its result on (True) or `timeout` passed."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._ids, timeout)

    # -- the session's side (called under the session's lock) --------------------------------
    def _add(self, request_id: str) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._ids.add(request_id)
            return True

    def _remove(self, request_id: str) -> None:
        with self._lock:
            self._ids.discard(request_id)
            if not self._ids:
                self._idle.notify_all()
