"""Placing a server's trace on the client's clock (the client's `time.monotonic_ns()`).

- Same machine, Triton's trace file: its marks are CLOCK_MONOTONIC nanoseconds, the clock
  of `time.monotonic_ns()` itself: nothing to move.
- OpenTelemetry: the marks are wall-clock (Unix) nanoseconds: on the same machine they are
  moved by the client's own wall-to-monotonic offset, measured once.
- A remote server: its clock is its own. Each matched request bounds the offset (server to
  client): the server's part lies inside the client's, so
  `send_start - server_start <= offset <= reply - server_end`. The bounds of every request
  so far are intersected and the middle taken; the half-width is the uncertainty, said with
  the figures ("remote server: its clock placed from the round trips, to within ±0.4 ms").

A "same machine" server whose trace falls outside the client's window by more than
`SLACK_NS` is not on this clock after all (a server in a VM): the placement turns to the
round-trip estimate and says so.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

SLACK_NS = 1_000_000  # 1 ms


class ServerClock(enum.StrEnum):
    MONOTONIC = "monotonic"  # Triton's trace file: CLOCK_MONOTONIC ns
    WALL = "wall"  # OpenTelemetry: Unix ns


def wall_to_monotonic_ns(samples: int = 5) -> int:
    """monotonic - wall on this machine, from the closest of a few paired reads."""
    best: tuple[int, int] | None = None
    for _ in range(samples):
        a = time.monotonic_ns()
        wall = time.time_ns()
        b = time.monotonic_ns()
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2 - wall)
    assert best is not None
    return best[1]


@dataclass
class ClockPlacement:
    """The offset to add to a server's marks to put them on the client's monotonic clock."""

    same_machine: bool
    server_clock: ServerClock = ServerClock.MONOTONIC
    _base_ns: int = 0  # the known offset on the same machine
    _estimating: bool = False
    _low: int | None = None
    _high: int | None = None
    _moved_off: bool = False  # a "same machine" server turned out to be on another clock

    def __post_init__(self) -> None:
        self._estimating = not self.same_machine
        if self.server_clock is ServerClock.WALL:
            self._base_ns = wall_to_monotonic_ns()

    def observe(self, send_start_ns: int, reply_ns: int, server_start_ns: int, server_end_ns: int) -> None:
        """One matched request: the client's window and the server's marks (its clock)."""
        low, high = send_start_ns - server_start_ns, reply_ns - server_end_ns
        if not self._estimating:
            base = self._base_ns
            if base < low - SLACK_NS or base > high + SLACK_NS:
                self._estimating, self._moved_off = True, True
            else:
                return
        if high < low:  # the server took longer than the client's window: no bound from it
            return
        if self._low is None or self._high is None:
            self._low, self._high = low, high
            return
        new_low, new_high = max(self._low, low), min(self._high, high)
        if new_low <= new_high:
            self._low, self._high = new_low, new_high
        elif high - low < self._high - self._low:  # drift: keep the tighter single bound
            self._low, self._high = low, high

    @property
    def offset_ns(self) -> int:
        if not self._estimating or self._low is None or self._high is None:
            return self._base_ns
        return (self._low + self._high) // 2

    @property
    def uncertainty_ns(self) -> int | None:
        """± of the estimate; 0 on one clock; None before any request bounds it."""
        if not self._estimating:
            return 0
        if self._low is None or self._high is None:
            return None
        return (self._high - self._low) // 2

    @property
    def estimated(self) -> bool:
        return self._estimating

    def describe(self) -> str:
        """One sentence on how the server's marks were placed."""
        if not self._estimating:
            if self.server_clock is ServerClock.WALL:
                return "same machine: the server's wall-clock marks moved onto the client's steady clock"
            return "same machine: the server's marks are on the client's own steady clock"
        why = (
            "the server's marks fell outside the client's window: not this machine's clock"
            if self._moved_off
            else "remote server"
        )
        spread = self.uncertainty_ns
        if spread is None:
            return f"{why}: its clock not placed yet (no request has bounded it)"
        return f"{why}: its clock placed from the round trips, to within ±{spread / 1e6:.2f} ms"
