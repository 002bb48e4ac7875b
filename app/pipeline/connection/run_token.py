"""RunToken: one attempt (a connect, the health checks of the session it opened), superseded
by the next. Replaces integer generation counters: a step holding an old token sees
`cancelled` and lets its result go; cancelling also runs the token's hooks (e.g. closing a
session whose open() is still blocked on the network, so it fails at once)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class RunToken:
    def __init__(self, name: str = "") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._cancelled = False
        self._hooks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Run `hook` when the token is cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                self._hooks.append(hook)
                return
        _run(hook)

    def cancel(self) -> None:
        """Idempotent, any thread; the hooks run on the caller's thread (they must not block)."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            _run(hook)

    def __repr__(self) -> str:
        return f"RunToken({self.name!r}{', cancelled' if self._cancelled else ''})"


def _run(hook: Callable[[], None]) -> None:
    try:
        hook()
    except Exception:
        log.exception("a cancel hook failed")
