"""Live preview benchmark: the real viewer window playing a 640x480 30 fps face video live.

Starts the embedded server (or uses --url), writes the video, runs the viewer (offscreen
unless QT_QPA_PLATFORM says otherwise, e.g. under xvfb-run) with the live preview, and
after a warm-up measures for --seconds: annotated display rate, inference rate, dropped
frames, capture-to-display latency p50/p95 and GUI heartbeat stalls (a 10 ms QTimer).

Run: .venv/bin/python tests/bench/bench_live.py [--seconds 30] [--warmup 5] [--in-flight 2]
     [--url HOST:PORT] [--video FILE] [--model NAME] [--profile]
--model person_segmentation draws a person mask on every frame, face_detector (the default)
a box with six landmarks. --smoke: 0.5 s after a 0.2 s warm-up on a short video (seconds; what
`make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import qasync
from PySide6.QtCore import QEvent, QObject, QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from app.pipeline.live import LiveStats
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.ui.qt_app import qt_message
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video

STALL_MS = 50.0


class Recorder(QObject):
    """Everything observed on the GUI thread, with monotonic times. Also watches the view's
    paint events: "capture-to-paint" is when Qt actually starts painting that frame."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[tuple[float, float]] = []  # (time, capture-to-display ms)
        self.painted: list[tuple[float, float]] = []  # (time, capture-to-paint ms)
        self.beats: list[float] = []
        self._unpainted: tuple[float, float] | None = None  # (time set, age then)

    def on_shown(self, _index: int, age_ms: float) -> None:
        now = time.monotonic()
        self.shown.append((now, age_ms))
        self._unpainted = (now, age_ms)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._unpainted is not None:
            now = time.monotonic()
            t_set, age = self._unpainted
            self.painted.append((now, age + (now - t_set) * 1000))
            self._unpainted = None
        return False

    def beat(self) -> None:
        self.beats.append(time.monotonic())


def live_stats(viewer: Viewer) -> LiveStats:
    """The capture's and the stream's counters of the run playing now."""
    run = viewer.live.live
    if run is None:
        raise SystemExit(f"the live preview is not playing ({viewer.live.state})")
    return run.stats()


async def measure(viewer: Viewer, rec: Recorder, warmup: float, seconds: float) -> dict[str, float]:
    while viewer.live.meter.shown < 10:
        if viewer.live.error or viewer.connection.state == "failed":
            raise SystemExit(f"live preview failed: {viewer.live.error or viewer.connection.state}")
        await asyncio.sleep(0.05)
    await asyncio.sleep(warmup)
    before = live_stats(viewer)
    t0 = time.monotonic()
    await asyncio.sleep(seconds)
    t1 = time.monotonic()
    after = live_stats(viewer)
    stream0, capture0, stream1, capture1 = before.stream, before.capture, after.stream, after.capture
    if stream0 is None or stream1 is None:
        raise SystemExit("the live preview lost its session while measuring")
    span = t1 - t0
    ages = np.array([age for t, age in rec.shown if t0 <= t < t1])
    paints = np.array([age for t, age in rec.painted if t0 <= t < t1])
    beats = np.array([t for t in rec.beats if t0 <= t < t1])
    gaps = np.diff(beats) * 1000 if beats.size > 1 else np.zeros(1)
    offered = stream1.offered - stream0.offered
    dropped = stream1.dropped - stream0.dropped
    return {
        "seconds": span,
        "capture_fps": (capture1.captured - capture0.captured) / span,
        "display_fps": ages.size / span,
        "inference_fps": (stream1.completed - stream0.completed) / span,
        "offered": offered,
        "dropped": dropped,
        "dropped_pct": 100.0 * dropped / offered if offered else 0.0,
        "latency_p50": float(np.percentile(ages, 50)) if ages.size else float("nan"),
        "latency_p95": float(np.percentile(ages, 95)) if ages.size else float("nan"),
        "latency_max": float(ages.max()) if ages.size else float("nan"),
        "paint_fps": paints.size / span,
        "paint_p50": float(np.percentile(paints, 50)) if paints.size else float("nan"),
        "paint_p95": float(np.percentile(paints, 95)) if paints.size else float("nan"),
        "stalls": int((gaps > STALL_MS).sum()),
        "max_gap": float(gaps.max()),
        "heartbeat_p99": float(np.percentile(gaps, 99)),
    }


def run(args: argparse.Namespace, url: str, video: Path) -> dict[str, float]:
    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    qInstallMessageHandler(qt_message)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(4, thread_name_prefix="bench-io")
    viewer = Viewer(ViewerOptions(urls=[url], model=args.model), executor)
    viewer.live_ui.toolbar.in_flight.setValue(args.in_flight)
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.apply_options()
    rec = Recorder()
    viewer.live.frame_shown.connect(rec.on_shown)
    overlays = {"frames": 0, "with_overlay": 0}
    view = viewer.window.view

    def count_overlays(_index: int, _age: float) -> None:
        # Checked as each frame is set: masks and keypoints really drawn, not only decoded.
        overlays["frames"] += 1
        overlays["with_overlay"] += bool(view.mask_items() or view.keypoint_items())

    viewer.live.frame_shown.connect(count_overlays)
    viewer.window.view.viewport().installEventFilter(rec)
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(rec.beat)
    profiler = cProfile.Profile() if args.profile else None
    try:
        viewer.window.show()
        viewer.start()
        viewer.live.open(str(video))
        heartbeat.start()
        if profiler is not None:
            profiler.enable()
        figures = loop.run_until_complete(measure(viewer, rec, args.warmup, args.seconds))
        if profiler is not None:
            profiler.disable()
        heartbeat.stop()
        started = time.monotonic()
        viewer.request_close()
        loop.run_until_complete(viewer.closed.wait())
        figures["close_ms"] = (time.monotonic() - started) * 1000
        figures["overlay_pct"] = 100.0 * overlays["with_overlay"] / max(overlays["frames"], 1)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
        asyncio.set_event_loop(None)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--url", default=None, help="Triton gRPC HOST:PORT (default: start the embedded server)"
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--video", type=Path, default=None, help="a video to play (default: generated)")
    parser.add_argument("--profile", action="store_true", help="cProfile the GUI thread while measuring")
    parser.add_argument("--model", default="face_detector", help="the model to run (default: face_detector)")
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.warmup = 0.5, 0.2
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-live-")))
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp / "settings")
        video = args.video
        if video is None:
            video = tmp / "face.mp4"
            frames = 30 if args.smoke else int((args.warmup + args.seconds + 5) * 30)  # looped
            print(f"writing a {frames / 30:.0f} s 640x480 30 fps face video…", file=sys.stderr)
            make_face_video(video, frames=frames, fps=30, size=(640, 480))
        url = args.url
        if url is None:
            print("starting the embedded server…", file=sys.stderr)
            server = stack.enter_context(EmbeddedServer(model_repository()))
            url = server.grpc_url
        f = run(args, url, video)
    print(
        f"live preview, {args.model}, 640x480 30 fps video, in-flight limit {args.in_flight}, "
        f"{os.cpu_count()} CPUs, QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM')}"
    )
    print(f"measured over {f['seconds']:.1f} s after a {args.warmup:.0f} s warm-up")
    print(f"  capture rate                   {f['capture_fps']:6.1f} fps")
    print(f"  annotated display rate         {f['display_fps']:6.1f} fps")
    print(f"  inference rate                 {f['inference_fps']:6.1f} results/s")
    print(
        f"  dropped frames                {f['dropped']:7.0f} ({f['dropped_pct']:.1f}% of {f['offered']:.0f})"
    )
    print(f"  capture-to-display latency p50 {f['latency_p50']:6.1f} ms")
    print(f"  capture-to-display latency p95 {f['latency_p95']:6.1f} ms  (max {f['latency_max']:.0f} ms)")
    print(f"  frames painted (paint events)  {f['paint_fps']:6.1f} fps")
    print(f"  capture-to-paint latency p50   {f['paint_p50']:6.1f} ms, p95 {f['paint_p95']:.1f} ms")
    print(
        f"  GUI heartbeat (10 ms timer)    {f['stalls']:6d} gaps > {STALL_MS:.0f} ms, max gap "
        f"{f['max_gap']:.0f} ms, p99 {f['heartbeat_p99']:.1f} ms"
    )
    print(f"  frames shown with mask/keypoints {f['overlay_pct']:4.0f} %")
    print(f"  window close                   {f['close_ms']:6.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
