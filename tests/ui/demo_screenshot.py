"""Render a small composition of the widgets to a PNG, to judge legibility by eye.

QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.ui.demo_screenshot /tmp/ui_demo.png
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import math

from PySide6.QtWidgets import QApplication, QGridLayout, QVBoxLayout, QWidget
from skimage import data

from app.inference.result import Detection, Status
from app.pipeline.batch import BatchCounts
from app.ui.analysis.request_log import RequestLog
from app.ui.analysis.scoped_stats import Scope, ScopeSnapshot
from app.ui.analysis.stats_panel import StatsPanel
from app.ui.batch.batch_panel import BatchPanel
from app.ui.batch.export import save_annotated_png
from app.ui.view.image_view import ImageView
from app.ui.widgets.banner import ErrorBanner
from app.ui.widgets.live_plot import LivePlot
from app.ui.widgets.thresholds import ThresholdsWidget
from tests.ui.helpers import make_result


def main(out: str) -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    image = data.astronaut()
    dets = [
        Detection((170, 60, 250, 170), 0.93, 0, "face"),
        Detection((0, 0, 120, 90), 0.41, 5, "flag"),
        Detection((380, 360, 500, 505), 0.67, 1, "helmet"),
    ]
    root = QWidget()
    grid = QGridLayout(root)
    banner = ErrorBanner()
    banner.show_error("Request timed out after 5.0 s (model face_detector, 127.0.0.1:8001)")
    banner.show_error("Request timed out after 5.0 s (model face_detector, 127.0.0.1:8001)")
    grid.addWidget(banner, 0, 0, 1, 2)
    view = ImageView()
    view.set_image(image, dets)
    grid.addWidget(view, 1, 0, 3, 1)
    side = QVBoxLayout()
    stats = StatsPanel()
    stats.show_snapshot(
        ScopeSnapshot(
            scope=Scope.LIVE,
            since=0.0,
            note="stream started",
            inputs=1247,
            sent=1247,
            ok=1238,
            failed=3,
            timed_out=2,
            cancelled=3,
            skipped=0,
            not_started=0,
            p50_ms=6.4,
            p95_ms=11.8,
            p99_ms=23.5,
            latency_samples=200,
            requests_per_s=61.3,
        ),
        in_flight=4,
    )
    stats.set_extra("Capture frames/s", "29.9")
    stats.set_extra("Dropped frames", "12 of 1259 (1%)")
    side.addWidget(stats)
    thresholds = ThresholdsWidget()
    side.addWidget(thresholds)
    plot = LivePlot()
    for i in range(120):
        t = 1000 + i * 0.5
        plot.add_point(t, 6 + 2 * math.sin(i / 8) + (15 if 60 < i < 66 else 0), 55 + 10 * math.cos(i / 11))
    side.addWidget(plot, 1)
    grid.addLayout(side, 1, 1, 3, 1)
    batch = BatchPanel()
    batch.start(312)
    batch.set_progress(140)
    batch.finish(BatchCounts(312, ok=310, failed=2, sent=312), 4.1)
    grid.addWidget(batch, 4, 0, 1, 2)
    log = RequestLog()
    log.add_results(
        [make_result(i) for i in range(6)]
        + [make_result(6, Status.FAILED, error="StatusCode.UNAVAILABLE: failed to connect"),
           make_result(7, Status.TIMEOUT), make_result(8, Status.CANCELLED), make_result(9)]
    )  # fmt: skip
    grid.addWidget(log, 5, 0, 1, 2)
    grid.setColumnStretch(0, 3)
    grid.setColumnStretch(1, 2)
    root.resize(1100, 900)
    root.show()
    app.processEvents()
    view.fit()
    app.processEvents()
    root.grab().save(out)
    save_annotated_png(out.replace(".png", "_export.png"), image, dets)
    view.zoom_by(3.0, view.mapFromScene(210, 115).toPointF())  # around the face
    app.processEvents()
    view.grab().save(out.replace(".png", "_zoom.png"))
    root.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ui_demo.png")
