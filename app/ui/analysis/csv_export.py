"""CSV files of the statistics (one row per scope) and of the request log (the rows shown),
each written whole or not at all."""

from __future__ import annotations

import csv
import dataclasses
import os
import time
from collections.abc import Iterable, Sequence

from app.system.atomic_files import replacing
from app.ui.analysis.scoped_stats import ScopeSnapshot

STATS_COLUMNS = [f.name for f in dataclasses.fields(ScopeSnapshot)]


def stats_rows(snapshots: Iterable[ScopeSnapshot]) -> list[dict[str, object]]:
    rows = []
    for snap in snapshots:
        row = dataclasses.asdict(snap)
        row["scope"] = snap.scope.value
        row["since"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(snap.since))
        for key in ("p50_ms", "p95_ms", "p99_ms", "requests_per_s"):
            value = row[key]
            row[key] = "" if value is None else round(float(value), 3)
        rows.append(row)
    return rows


def write_stats_csv(path: str | os.PathLike[str], snapshots: Iterable[ScopeSnapshot]) -> int:
    rows = stats_rows(snapshots)
    with replacing(path, newline="") as f:
        writer = csv.DictWriter(f, STATS_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def write_table_csv(
    path: str | os.PathLike[str], header: Sequence[str], rows: Iterable[Sequence[str]]
) -> int:
    n = 0
    with replacing(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for row in rows:
            writer.writerow(row)
            n += 1
    return n
