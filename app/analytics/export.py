"""Events written out as JSON Lines or CSV (the viewer's events panel exports through here),
whole or not at all."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable

from app.analytics.events import CSV_COLUMNS, AnalyticsEvent
from app.system.atomic_files import write_whole

FORMATS = ("jsonl", "csv")


def events_jsonl(events: Iterable[AnalyticsEvent]) -> str:
    """One record a line, as `infer --zones` writes them."""
    return "".join(json.dumps(e.to_record(), ensure_ascii=False) + "\n" for e in events)


def events_csv(events: Iterable[AnalyticsEvent]) -> str:
    """A header of CSV_COLUMNS, then one row an event (a field it does not have is empty)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for event in events:
        writer.writerow(event.to_record() | {"event": event.kind.value})
    return out.getvalue()


def save_events(events: Iterable[AnalyticsEvent], path: str | os.PathLike[str]) -> None:
    """`path` ending in .csv: CSV; otherwise JSON Lines (OSError naming `path`)."""
    text = events_csv(events) if os.fspath(path).lower().endswith(".csv") else events_jsonl(events)
    write_whole(path, text)
