"""What the lines and zones report as it happens: one `AnalyticsEvent` per crossing, entry
and exit, the same object for the command line's JSON Lines and the viewer's events panel."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class EventKind(enum.StrEnum):
    LINE_CROSSED = "line_crossed"
    ZONE_ENTERED = "zone_entered"
    ZONE_LEFT = "zone_left"


class Direction(enum.StrEnum):
    IN = "in"  # from the side where cross(b - a, p - a) > 0 to the side where it is < 0
    OUT = "out"


class LeaveReason(enum.StrEnum):
    LEFT = "left"  # seen outside (for the frames that confirm it)
    LOST = "lost"  # the tracker lost it while it was inside
    ENDED = "ended"  # the stream ended while it was inside


@dataclass(frozen=True, slots=True)
class AnalyticsEvent:
    kind: EventKind
    name: str  # the line's or the zone's
    track_id: int
    class_id: int
    label: str
    frame: int  # when it happened (see docs/analytics.md: not always the frame it was decided on)
    time_s: float
    direction: Direction | None = None  # lines
    dwell_s: float | None = None  # zone_left: this visit's time in the zone
    reason: LeaveReason | None = None  # zone_left
    source: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The JSON Lines record (docs/analytics.md)."""
        record: dict[str, Any] = {"event": self.kind.value}
        record["line" if self.kind is EventKind.LINE_CROSSED else "zone"] = self.name
        if self.direction is not None:
            record["direction"] = self.direction.value
        record.update(
            track_id=self.track_id,
            class_id=self.class_id,
            label=self.label,
            frame=self.frame,
            time_s=round(self.time_s, 3),
        )
        if self.dwell_s is not None:
            record["dwell_s"] = round(self.dwell_s, 3)
        if self.reason is not None:
            record["reason"] = self.reason.value
        if self.source is not None:
            record["source"] = self.source
        return record


CSV_COLUMNS = (
    "event",
    "line",
    "zone",
    "direction",
    "track_id",
    "class_id",
    "label",
    "frame",
    "time_s",
    "dwell_s",
    "reason",
    "source",
)
