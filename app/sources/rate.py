"""Rolling frame rate over the last second."""

from __future__ import annotations

import threading
from collections import deque


class RateMeter:
    """Events per second over a sliding window; tick() and rate() may be called from different threads."""

    def __init__(self, window_s: float = 1.0) -> None:
        self._window = window_s
        self._times: deque[float] = deque()
        # Ticks come from the capture thread, reads from the consumer's thread.
        self._lock = threading.Lock()

    def tick(self, now: float) -> None:
        with self._lock:
            self._times.append(now)
            self._trim(now)

    def rate(self, now: float) -> float:
        with self._lock:
            self._trim(now)
            if len(self._times) < 2:
                return 0.0
            span = self._times[-1] - self._times[0]
            return (len(self._times) - 1) / span if span > 0 else 0.0

    def _trim(self, now: float) -> None:
        while self._times and now - self._times[0] > self._window:
            self._times.popleft()
