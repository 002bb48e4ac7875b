"""The live stream's own rows of the statistics panel (under the live scope's figures): what
the source delivered, what was inferred and dropped, and how fast and how late pictures show."""

from __future__ import annotations

from app.pipeline.display import DisplayStats
from app.pipeline.live import StreamStats
from app.ui.analysis.scoped_stats import Scope
from app.ui.analysis.stats_panel import StatsPanel, format_ms

LIVE_ROWS = (
    "Capture frames/s",
    "Inferred frames",
    "Dropped frames",
    "Display frames/s",
    "Display lag p50",
    "Display lag p95",
)


def show_live_rows(
    panel: StatsPanel, display: DisplayStats, stream: StreamStats | None, capture_fps: float
) -> None:
    """The rows shown while the panel shows the live scope (its Requests/s is the inferred
    frames per second: one request per frame), removed otherwise. `stream`: None before a
    run counted anything; `capture_fps`: 0 when nothing plays."""
    if panel.scope() is not Scope.LIVE:
        for name in LIVE_ROWS:
            panel.remove_extra(name)
        return
    panel.set_extra(LIVE_ROWS[0], f"{capture_fps:.1f}", "Frames read from the source per second")
    inferred, dropped, offered = "0", "0", 0
    if stream is not None:
        pct = 100.0 * stream.dropped / stream.offered if stream.offered else 0.0
        inferred, offered = f"{stream.completed} of {stream.offered}", stream.offered
        dropped = f"{stream.dropped} ({pct:.0f}%)"
    panel.set_extra(
        LIVE_ROWS[1], inferred, "Frames whose request ended (of the frames captured), after the end too"
    )
    panel.set_extra(
        LIVE_ROWS[2],
        dropped,
        f"Frames not sent because the stream's requests in flight were all busy (of {offered} captured)",
    )
    panel.set_extra(LIVE_ROWS[3], f"{display.display_fps:.1f}", "Annotated frames drawn per second")
    lag = "From the frame's capture to its picture on screen (with its boxes)"
    panel.set_extra(LIVE_ROWS[4], format_ms(display.latency_p50_ms), lag)
    panel.set_extra(LIVE_ROWS[5], format_ms(display.latency_p95_ms), lag)
