"""`InFlight`: the session's requests in flight and its window (the backpressure every
submitter waits on), under the session's one lock.

One lock for the session's state and this registry: `submit` checks that the session is
open and registers its request in one step, and `close` marks the session closing in one
step too, so a request is either registered before the close drains or refused. Each
request ends here exactly once (`finish`), and gives back its window slots exactly once
(`release_slots`): when its reply arrives, or when it ends without one.
"""

from __future__ import annotations

import threading
import time

from app.inference.core.group import RequestGroup
from app.inference.core.request import PendingRequest
from app.inference.core.window import Window


class InFlight:
    def __init__(self, lock: threading.Lock, max_in_flight: int) -> None:
        self.lock = lock  # the session's: see the module docstring
        self.window = Window(max_in_flight)
        self._pending: dict[str, PendingRequest] = {}
        self._drained = threading.Condition(lock)

    def __len__(self) -> int:
        with self.lock:
            return len(self._pending)

    def add(self, req: PendingRequest) -> None:
        """(Lock held, with the session's state checked in the same step.)"""
        self._pending[req.id] = req

    def get(self, request_id: str) -> PendingRequest | None:
        with self.lock:
            return self._pending.get(request_id)

    def ids(self, group: RequestGroup | None = None) -> list[str]:
        """The requests in flight (those of `group` only, when given)."""
        with self.lock:
            return [rid for rid, req in self._pending.items() if group is None or req.group is group]

    def finish(self, req: PendingRequest) -> bool:
        """Mark `req` ended; False when it already was (every request ends exactly once)."""
        with self.lock:
            if req.finished:
                return False
            req.finished = True
            self._pending.pop(req.id, None)
            if not self._pending:
                self._drained.notify_all()
            return True

    def release_slots(self, req: PendingRequest) -> None:
        """Give back the request's places in the windows (once): when its reply arrives, or
        when it ends without one."""
        with self.lock:
            if not req.holds_slots:
                return
            req.holds_slots = False
        self.window.release()
        if req.group is not None:
            req.group.window.release()

    def wait_drained(self, timeout_s: float) -> None:
        """Until nothing is in flight, or for `timeout_s` at most."""
        with self.lock:
            deadline = time.monotonic() + timeout_s
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._drained.wait(remaining)
