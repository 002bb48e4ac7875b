"""A call repeated every few seconds on a daemon thread of its own, stopped cooperatively.

Why a daemon thread: what it watches (a server, a folder, a metrics endpoint) needs no
clean-up of its own when the process exits; `stop()` still joins it, so a normal shutdown
leaves no thread behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Periodic:
    """`step()` now, then every `interval_s` after each step ends, until `stop()` or until a
    step returns False. `stop()` is idempotent and waits at most `join_s` for a step in
    progress (never when called from the step itself)."""

    def __init__(
        self, step: Callable[[], bool | None], interval_s: float, name: str, join_s: float = 2.0
    ) -> None:
        self._step = step
        self.interval_s = interval_s
        self._name = name
        self._join_s = join_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self) -> Periodic:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._step() is False:
                return
            if self._stopping.wait(self.interval_s):
                return

    def stop(self) -> None:
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._join_s)
