"""How often an embedded server that died is started again: a crash loop stops instead of
spinning (today 3 restarts within 5 minutes), and the user decides what next."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

MAX_LOCAL_RESTARTS = 3
LOCAL_RESTART_WINDOW_S = 300.0


class RestartBudget:
    """`take()` from any thread: True (and counted) while fewer than `limit` restarts were
    taken within the last `window_s` seconds."""

    def __init__(
        self,
        limit: int = MAX_LOCAL_RESTARTS,
        window_s: float = LOCAL_RESTART_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._taken: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            self._forget_before(now - self.window_s)
            if len(self._taken) >= self.limit:
                return False
            self._taken.append(now)
            return True

    @property
    def used(self) -> int:
        """Restarts taken within the window."""
        with self._lock:
            self._forget_before(self._clock() - self.window_s)
            return len(self._taken)

    def reset(self) -> None:
        """The user asked to connect: the budget starts again."""
        with self._lock:
            self._taken.clear()

    def describe_use(self) -> str:
        """e.g. "2 of 3 restarts allowed within 5 minutes"."""
        return f"{self.used} of {self.limit} restarts allowed within {self.window_s / 60:.0f} minutes"

    def describe_exhausted(self) -> str:
        """e.g. "4 times within 5 minutes" (the restarts taken and this stop)."""
        return f"{self.used + 1} times within {self.window_s / 60:.0f} minutes"

    def _forget_before(self, oldest: float) -> None:
        while self._taken and self._taken[0] < oldest:
            self._taken.popleft()
