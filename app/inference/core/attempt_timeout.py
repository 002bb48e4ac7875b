"""`AttemptTimeout`: how long one attempt of a request may go unanswered before the request
is sent again on a fresh call (a paused or wedged server answers nothing, not even an error:
only the request's own deadline would end it, all of it lost waiting).

The limit follows what the server has shown: p99 of the last round trips x `P99_FACTOR`,
never below `MIN_S` nor above `MAX_S`; before `SAMPLES_NEEDED` replies, `MAX_S`. Each
further attempt of one request waits twice as long as the one before (up to `MAX_S`), so a
server slower than it was is not flooded with copies. A fixed limit (`--attempt-timeout S`)
replaces the derived one; none (`off`) sends each request once per failure, as before.
Thread-safe: replies are observed on worker threads, limits read on the sending threads.
"""

from __future__ import annotations

import collections
import math
import threading

MIN_S = 1.0
MAX_S = 30.0
P99_FACTOR = 4.0
SAMPLES_NEEDED = 20
SAMPLES_KEPT = 256
RECOMPUTE_EVERY = 16  # replies between two p99 computations (a sort of SAMPLES_KEPT values)


class AttemptTimeout:
    """`fixed_s`: a limit given by the user (None: derived). `enabled` False: never re-send."""

    def __init__(self, fixed_s: float | None = None, *, enabled: bool = True) -> None:
        self.fixed_s = fixed_s
        self.enabled = enabled
        self._lock = threading.Lock()
        self._round_trips: collections.deque[float] = collections.deque(maxlen=SAMPLES_KEPT)
        self._since_computed = 0
        self._derived = MAX_S

    def observe(self, round_trip_s: float) -> None:
        """An attempt answered after `round_trip_s` seconds."""
        if not (self.enabled and self.fixed_s is None and math.isfinite(round_trip_s)):
            return
        with self._lock:
            self._round_trips.append(max(0.0, round_trip_s))
            self._since_computed += 1
            if len(self._round_trips) >= SAMPLES_NEEDED and self._since_computed >= RECOMPUTE_EVERY:
                self._since_computed = 0
                ordered = sorted(self._round_trips)
                p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]
                self._derived = min(MAX_S, max(MIN_S, p99 * P99_FACTOR))

    @property
    def base_s(self) -> float | None:
        """The first attempt's limit now (None: attempts are never given up on)."""
        if not self.enabled:
            return None
        if self.fixed_s is not None:
            return self.fixed_s
        with self._lock:
            return self._derived

    def limit(self, attempt: int) -> float | None:
        """How long attempt number `attempt` (1 for the first) may go unanswered."""
        base = self.base_s
        if base is None:
            return None
        ceiling = max(MAX_S, base)  # a fixed limit above MAX_S stays what the user asked
        return min(ceiling, base * 2 ** max(0, attempt - 1))

    def describe(self) -> str:
        """For messages: "1.0 s (p99 x 4, within 1-30 s)", "5 s", "off"."""
        base = self.base_s
        if base is None:
            return "off"
        if self.fixed_s is not None:
            return f"{base:g} s"
        return f"{base:.1f} s (p99 of the round trips x {P99_FACTOR:g}, within {MIN_S:g}-{MAX_S:g} s)"
