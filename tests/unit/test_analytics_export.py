"""Events exported as JSON Lines and CSV read back as the records infer writes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from app.analytics.events import AnalyticsEvent, Direction, EventKind, LeaveReason
from app.analytics.export import save_events

EVENTS = [
    AnalyticsEvent(
        EventKind.LINE_CROSSED, "door", 3, 0, "face", 42, 1.4, direction=Direction.IN, source="cam"
    ),
    AnalyticsEvent(
        EventKind.ZONE_LEFT, "queue, left", 3, 0, "face", 90, 3.0, dwell_s=1.25, reason=LeaveReason.LOST
    ),
]


def test_json_lines_are_the_records(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    save_events(EVENTS, path)
    assert [json.loads(line) for line in path.read_text().splitlines()] == [e.to_record() for e in EVENTS]


def test_csv_has_one_column_per_field(tmp_path: Path) -> None:
    path = tmp_path / "events.CSV"
    save_events(EVENTS, path)
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["event"] == "line_crossed" and rows[0]["line"] == "door" and rows[0]["zone"] == ""
    assert (rows[0]["direction"], rows[0]["frame"], rows[0]["time_s"], rows[0]["source"]) == (
        "in",
        "42",
        "1.4",
        "cam",
    )
    assert (rows[1]["zone"], rows[1]["dwell_s"], rows[1]["reason"]) == ("queue, left", "1.25", "lost")
