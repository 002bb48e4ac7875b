"""The viewer's request log: its resident memory once full (10,000 rows), and that it stays
there while rows keep coming (the oldest dropped first). Rows like a live stream's (one
video, a frame number, a latency), added 50 at a time as the viewer flushes them, the table
shown (offscreen) and following the newest row.

Run: .venv/bin/python tests/bench/bench_request_log.py [--rows 10000] [--more 30000]
--smoke: 500 rows then 1,000 more (seconds; figures meaningless).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication

from app.inference.result import InferenceResult, Status
from app.ui.analysis.request_log import DEFAULT_MAX_ROWS, RequestLog

FLUSH = 50  # rows per insert, as the viewer flushes its results


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def results(start: int, count: int) -> list[InferenceResult]:
    return [
        InferenceResult(
            request_id=f"5f3a9c-{i}",
            status=Status.OK,
            source="/home/user/videos/entrance-camera.mp4",
            frame=i,
            latency_ms=8.0 + i % 7,
            width=640,
            height=480,
        )
        for i in range(start, start + count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=DEFAULT_MAX_ROWS, help="the log's bound")
    parser.add_argument("--more", type=int, default=30_000, help="rows added once it is full")
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    rows, more = (500, 1_000) if args.smoke else (args.rows, args.more)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    log = RequestLog(max_rows=rows)
    log.resize(900, 300)
    log.show()
    app.processEvents()
    gc.collect()
    before = rss_mb()
    for start in range(0, rows, FLUSH):
        log.add_results(results(start, FLUSH))
        app.processEvents()
    gc.collect()
    full = rss_mb()
    for start in range(rows, rows + more, FLUSH):
        log.add_results(results(start, FLUSH))
        app.processEvents()
    gc.collect()
    after = rss_mb()
    assert log.model.rowCount() == rows
    per_row = (full - before) * 2**20 / rows
    print(f"request log full ({rows} rows): +{full - before:.1f} MB resident ({per_row:.0f} B/row)")
    print(f"after {more} more rows: +{after - before:.1f} MB (change once full {after - full:+.1f} MB)")
    log.close()


if __name__ == "__main__":
    main()
