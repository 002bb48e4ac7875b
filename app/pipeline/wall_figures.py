"""The figures of a wall of live streams: per stream what its tile shows (frames shown per
second, capture-to-display latency, frames dropped), and the wall's overall line.

Qt-free: the viewer's wall reads each stream's `DisplayStats` (GUI thread) and `LiveStats`
(the capture's and the job's counters) and formats them here; the wall benchmark computes
the same figures from the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.pipeline.display import DisplayStats
from app.pipeline.live import LiveStats, StreamStats


@dataclass(frozen=True)
class StreamFigures:
    """One stream's figures now."""

    shown: int  # frames drawn
    display_fps: float
    latency_p50_ms: float | None  # capture to display
    latency_p95_ms: float | None
    captured: int  # frames read from the source
    capture_fps: float
    dropped: int  # frames not sent: the stream's in-flight window was full
    in_flight: int

    @classmethod
    def of(cls, display: DisplayStats, live: LiveStats | None) -> StreamFigures:
        stream = live.stream if live is not None else None
        capture = live.capture if live is not None else None
        return cls(
            shown=display.shown,
            display_fps=display.display_fps,
            latency_p50_ms=display.latency_p50_ms,
            latency_p95_ms=display.latency_p95_ms,
            captured=capture.captured if capture is not None else 0,
            capture_fps=capture.fps if capture is not None else 0.0,
            dropped=stream.dropped if stream is not None else 0,
            in_flight=stream.in_flight if stream is not None else 0,
        )

    def text(self) -> str:
        """e.g. "29.8 fps · 41 ms · 12 dropped · p95 63 ms" (the least needed last: a narrow
        tile drops it first)."""
        parts = [f"{self.display_fps:.1f} fps"]
        if self.latency_p50_ms is not None:
            parts.append(f"{self.latency_p50_ms:.0f} ms")
        parts.append(f"{self.dropped} dropped")
        if self.latency_p95_ms is not None:
            parts.append(f"p95 {self.latency_p95_ms:.0f} ms")
        return " · ".join(parts)


@dataclass(frozen=True)
class WallFigures:
    """The wall as a whole: its streams' figures added up (the latency: the worst stream's)."""

    streams: int
    playing: int
    display_fps: float
    shown: int
    dropped: int
    worst_p50_ms: float | None
    worst_p95_ms: float | None

    @classmethod
    def of(cls, figures: Sequence[StreamFigures], playing: int) -> WallFigures:
        p50s = [f.latency_p50_ms for f in figures if f.latency_p50_ms is not None]
        p95s = [f.latency_p95_ms for f in figures if f.latency_p95_ms is not None]
        return cls(
            streams=len(figures),
            playing=playing,
            display_fps=sum(f.display_fps for f in figures),
            shown=sum(f.shown for f in figures),
            dropped=sum(f.dropped for f in figures),
            worst_p50_ms=max(p50s) if p50s else None,
            worst_p95_ms=max(p95s) if p95s else None,
        )

    def text(self) -> str:
        """e.g. "4 streams (4 playing) · 118.2 frames/s shown · latency p50 up to 45 ms · 31 dropped"."""
        noun = "stream" if self.streams == 1 else "streams"
        parts = [f"{self.streams} {noun} ({self.playing} playing)", f"{self.display_fps:.1f} frames/s shown"]
        if self.worst_p50_ms is not None:
            p95 = f", p95 {self.worst_p95_ms:.0f}" if self.worst_p95_ms is not None else ""
            parts.append(f"latency p50 up to {self.worst_p50_ms:.0f} ms{p95}")
        parts.append(f"{self.dropped} dropped")
        return " · ".join(parts)


def combined_display(stats: Sequence[DisplayStats]) -> DisplayStats:
    """The streams' display figures as one stream's (the Statistics panel's live rows while the
    wall shows): counts and rates added up, the latency the worst stream's."""
    p50s = [s.latency_p50_ms for s in stats if s.latency_p50_ms is not None]
    p95s = [s.latency_p95_ms for s in stats if s.latency_p95_ms is not None]
    return DisplayStats(
        shown=sum(s.shown for s in stats),
        results=sum(s.results for s in stats),
        coalesced=sum(s.coalesced for s in stats),
        display_fps=sum(s.display_fps for s in stats),
        latency_p50_ms=max(p50s) if p50s else None,
        latency_p95_ms=max(p95s) if p95s else None,
    )


def combined_stream(stats: Sequence[StreamStats | None]) -> StreamStats | None:
    """The streams' request figures added up (None: none has counted anything yet)."""
    counted = [s for s in stats if s is not None]
    if not counted:
        return None
    return StreamStats(
        offered=sum(s.offered for s in counted),
        submitted=sum(s.submitted for s in counted),
        dropped=sum(s.dropped for s in counted),
        completed=sum(s.completed for s in counted),
        in_flight=sum(s.in_flight for s in counted),
        inference_fps=sum(s.inference_fps for s in counted),
    )
