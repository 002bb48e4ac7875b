"""Display-side figures of a live stream: display rate and capture-to-display latency."""

from __future__ import annotations

import time
from dataclasses import dataclass

from app.inference.core.tally import LatencyWindow
from app.sources.rate import RateMeter

LATENCY_WINDOW = 300  # samples behind the shown p50/p95 (~10 s at 30 fps)


@dataclass(frozen=True)
class DisplayStats:
    shown: int  # frames drawn
    results: int  # results received (shown or coalesced away)
    coalesced: int  # results replaced by a newer one before they could be drawn
    display_fps: float
    latency_p50_ms: float | None
    latency_p95_ms: float | None


class DisplayMeter:
    """Counts the frames drawn and how old they were (GUI thread only)."""

    def __init__(self) -> None:
        self._rate = RateMeter()
        self._latencies = LatencyWindow(LATENCY_WINDOW)
        self.shown = 0
        self.results = 0
        self.coalesced = 0

    def result(self) -> None:
        self.results += 1

    def drawn(self, captured_at: float, now: float | None = None) -> float:
        """A frame captured at `captured_at` (monotonic) is drawn now; returns its age in ms."""
        now = time.monotonic() if now is None else now
        age_ms = (now - captured_at) * 1000.0
        self.shown += 1
        self._latencies.add(age_ms)
        self._rate.tick(now)
        return age_ms

    def stats(self) -> DisplayStats:
        p50, p95 = self._latencies.percentiles(50, 95)
        return DisplayStats(
            self.shown, self.results, self.coalesced, self._rate.rate(time.monotonic()), p50, p95
        )
