"""Live preview benchmark: the real viewer window playing MJPG webcam-like videos live.

For each configuration (640x480@30, 1080p@30, 1080p@60, 2160p@30 by default) it writes an MJPG
video (a detailed picture with a moving face, the size of a real camera's JPEGs; looped), runs
the viewer (offscreen unless QT_QPA_PLATFORM says otherwise, e.g. under xvfb-run) in a process
of its own playing it live, and after a warm-up measures for --seconds: capture, display and
inference rates, frames dropped (not sent: the in-flight window was full) and frames the reader
fell behind the source by, capture-to-display latency p50/p95 (from the moment the frame was
read from the source, its decoding included, to the picture set in the view) and
capture-to-paint, GUI heartbeat stalls (a 10 ms QTimer; a gap over 50 ms is a stall), the
client's CPU time per displayed frame (the viewer's process; the server runs in its own), the
size frames were decoded at, and the load averages around each run.

--compare-with DIR measures another checkout of the app too (e.g. `git archive main | tar -x
-C DIR`), interleaved with this one configuration by configuration and round by round, so a
busy machine weighs on both alike.

Run: .venv/bin/python tests/bench/bench_live.py [--configs 1080p@60,2160p@30] [--seconds 30]
     [--warmup 5] [--rounds 2] [--in-flight 2] [--url HOST:PORT] [--model NAME]
     [--compare-with DIR] [--video-dir DIR] [--profile]
--smoke: every configuration for 0.5 s after a 0.2 s warm-up, one process, short videos
(seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STALL_MS = 50.0
WINDOW_SIZE = (1280, 800)  # the viewer's window: a laptop-sized window, the view ~1000 px wide


@dataclass(frozen=True)
class Config:
    name: str
    size: tuple[int, int]
    fps: int

    def video_name(self, smoke: bool) -> str:
        return f"webcam-{self.size[0]}x{self.size[1]}-{self.fps}{'-smoke' if smoke else ''}.avi"


CONFIGS = {
    c.name: c
    for c in (
        Config("640x480@30", (640, 480), 30),
        Config("1080p@30", (1920, 1080), 30),
        Config("1080p@60", (1920, 1080), 60),
        Config("2160p@30", (3840, 2160), 30),
    )
}
LOOP_SECONDS = 10  # the videos are this long and played in a loop


# ----- the parent: videos, server, one process per measurement ------------------------------------


def make_videos(configs: list[Config], folder: Path, smoke: bool) -> dict[str, Path]:
    from tests.media import make_webcam_video

    videos = {}
    for config in configs:
        path = folder / config.video_name(smoke)
        if not path.exists():
            frames = 8 if smoke else LOOP_SECONDS * config.fps
            print(f"writing {path.name} ({frames} frames)…", file=sys.stderr, flush=True)
            partial = path.with_suffix(".part.avi")
            make_webcam_video(partial, frames, config.fps, config.size)
            partial.rename(path)
        videos[config.name] = path
    return videos


def measure_in_process(
    args: argparse.Namespace, app_root: Path, configs: list[Config], videos: dict[str, Path], url: str
) -> list[dict[str, object]]:
    """The viewer of `app_root` playing `configs` one after the other, in a process of its own."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--app-root",
        str(app_root),
        "--url",
        url,
        "--configs",
        ",".join(c.name for c in configs),
        "--videos",
        json.dumps({name: str(path) for name, path in videos.items()}),
        "--seconds",
        str(args.seconds),
        "--warmup",
        str(args.warmup),
        "--in-flight",
        str(args.in_flight),
        "--model",
        args.model,
    ]
    if args.profile:
        command.append("--profile")
    if args.record:
        command.append("--record")
    if args.track:
        command.append("--track")
    env = {**os.environ, "PYTHONPATH": str(app_root)}
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, cwd=app_root)
    if done.returncode != 0:
        raise SystemExit(f"the measuring process for {app_root} exited {done.returncode}")
    rows = []
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            rows.append(json.loads(line.removeprefix("RESULT ")))
        else:
            print(line)  # a profile
    return rows


def print_rows(rows: list[dict[str, object]]) -> None:
    print(
        f"{'configuration':<12} {'app':<8} {'rnd':>3} {'load 1m':>7} {'capt/s':>6} {'disp/s':>6} "
        f"{'inf/s':>6} {'dropped':>9} {'behind':>6} {'p50 ms':>6} {'p95 ms':>6} {'paint95':>7} "
        f"{'stalls':>6} {'maxgap':>6} {'cpu ms/fr':>9} {'cpu %':>5} {'decoded':>9} {'lost %':>6}"
    )
    for r in rows:
        f = dict(r)
        print(
            f"{f['config']:<12} {f['app']:<8} {f['round']:>3} {f['load_1m']:7.1f} {f['capture_fps']:6.1f} "
            f"{f['display_fps']:6.1f} {f['inference_fps']:6.1f} "
            f"{f['dropped']:>4.0f}/{f['offered']:<4.0f} {f['behind']:6.0f} {f['latency_p50']:6.1f} "
            f"{f['latency_p95']:6.1f} {f['paint_p95']:7.1f} {f['stalls']:6d} {f['max_gap']:6.0f} "
            f"{f['cpu_ms_per_frame']:9.1f} {f['cpu_pct']:5.0f} {f['decoded']:>9} {f['lost_pct']:6.1f}"
        )


def parent(args: argparse.Namespace) -> int:
    configs = [CONFIGS[name] for name in args.configs.split(",")]
    roots = [("this", ROOT)] + ([("compared", args.compare_with.resolve())] if args.compare_with else [])
    with ExitStack() as stack:
        folder = args.video_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
        folder.mkdir(parents=True, exist_ok=True)
        videos = make_videos(configs, folder, args.smoke)
        url = args.url
        if url is None:
            from app.resources import model_repository
            from app.server.embedded import EmbeddedServer

            print("starting the embedded server…", file=sys.stderr, flush=True)
            server = stack.enter_context(EmbeddedServer(model_repository()))
            url = server.grpc_url
        rows: list[dict[str, object]] = []
        # Interleaved: round by round, configuration by configuration, one app after the other.
        batches = [configs] if args.smoke else [[c] for c in configs]
        for round_ in range(1, args.rounds + 1):
            for batch in batches:
                for label, root in roots:
                    for row in measure_in_process(args, root, batch, videos, url):
                        rows.append({**row, "app": label, "round": round_})
    print(
        f"live preview, {args.model}, MJPG videos looped, in-flight limit {args.in_flight}, "
        f"{os.cpu_count()} CPUs, QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM', 'offscreen')}, "
        f"window {WINDOW_SIZE[0]}x{WINDOW_SIZE[1]}, {args.seconds:g} s after a {args.warmup:g} s warm-up"
    )
    if args.compare_with:
        print(f"app 'this': {ROOT}; app 'compared': {args.compare_with}")
    print_rows(rows)
    print(
        "dropped: frames not sent (the in-flight window was full) of those read; behind: frames "
        "the reader fell behind the source; lost: both, of the source's frames; "
        "p50/p95: capture-to-display; paint95: capture-to-paint "
        f"p95; stalls: GUI heartbeat gaps > {STALL_MS:.0f} ms; cpu: the viewer's process"
    )
    for r in rows:
        print(f"  {r['config']} {r['app']} round {r['round']}: {r['detail']}")
    return 0


# ----- the child: the viewer measuring -------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    videos = {name: Path(path) for name, path in json.loads(args.videos).items()}
    for name in args.configs.split(","):
        # Fresh settings for every viewer: none inherits the window layout the last one saved.
        with tempfile.TemporaryDirectory(prefix="bench-live-settings-") as settings:
            os.environ["TRITON_VIEWER_SETTINGS_DIR"] = settings
            figures = run_viewer(args, CONFIGS[name], videos[name])
        print("RESULT " + json.dumps(figures), flush=True)
    return 0


def settings_dir() -> str:
    return os.environ["TRITON_VIEWER_SETTINGS_DIR"]


def run_viewer(args: argparse.Namespace, config: Config, video: Path) -> dict[str, object]:
    import asyncio
    import cProfile
    import pstats
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import qasync
    from PySide6.QtCore import QEvent, QObject, QTimer, qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from app.pipeline.live import LiveStats
    from app.ui.qt_app import qt_message
    from app.ui.viewer import Viewer, ViewerOptions

    class Observer(QObject):
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
        run = viewer.live.live
        if run is None:
            raise SystemExit(f"the live preview is not playing ({viewer.live.state})")
        return run.stats()

    async def measure(viewer: Viewer, obs: Observer) -> dict[str, object]:
        while viewer.live.meter.shown < 10:
            if viewer.live.error or viewer.connection.state == "failed":
                raise SystemExit(f"live preview failed: {viewer.live.error or viewer.connection.state}")
            await asyncio.sleep(0.05)
        await asyncio.sleep(args.warmup)
        recording = Path(settings_dir()) / "recording.mp4"
        if args.record:
            viewer.live.recorder.start(recording)
        if args.track:
            viewer.analysis.set_tracking(True)  # its first frames import the tracking library
        load_before = os.getloadavg()
        before = live_stats(viewer)
        cpu0 = os.times()
        t0 = time.monotonic()
        await asyncio.sleep(args.seconds)
        t1 = time.monotonic()
        cpu1 = os.times()
        after = live_stats(viewer)
        load_after = os.getloadavg()
        recorded = ""
        if args.record:
            await viewer.live.recorder.stop()
            recorded = viewer.window.statusBar().currentMessage()
        stream0, capture0, stream1, capture1 = before.stream, before.capture, after.stream, after.capture
        if stream0 is None or stream1 is None:
            raise SystemExit("the live preview lost its session while measuring")
        span = t1 - t0
        ages = np.array([age for t, age in obs.shown if t0 <= t < t1])
        paints = np.array([age for t, age in obs.painted if t0 <= t < t1])
        beats = np.array([t for t in obs.beats if t0 <= t < t1])
        gaps = np.diff(beats) * 1000 if beats.size > 1 else np.zeros(1)
        offered = stream1.offered - stream0.offered
        dropped = stream1.dropped - stream0.dropped
        captured = capture1.captured - capture0.captured
        cpu_s = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        shown = viewer.window.view.shown_image()
        view = viewer.window.view.viewport()
        nan = float("nan")
        return {
            "config": config.name,
            "seconds": span,
            "load_1m": (load_before[0] + load_after[0]) / 2,
            "load": f"{load_before[0]:.1f}/{load_before[1]:.1f}/{load_before[2]:.1f}",
            "capture_fps": captured / span,
            "display_fps": ages.size / span,
            "inference_fps": (stream1.completed - stream0.completed) / span,
            "offered": offered,
            "dropped": dropped,
            "behind": max(0.0, config.fps * span - captured),
            # Of the source's frames in the span: not sent (dropped) or never read (behind; a
            # camera's driver would have dropped those).
            "lost_pct": 100 * (dropped + max(0.0, config.fps * span - captured)) / (config.fps * span),
            "latency_p50": float(np.percentile(ages, 50)) if ages.size else nan,
            "latency_p95": float(np.percentile(ages, 95)) if ages.size else nan,
            "latency_max": float(ages.max()) if ages.size else nan,
            "paint_p50": float(np.percentile(paints, 50)) if paints.size else nan,
            "paint_p95": float(np.percentile(paints, 95)) if paints.size else nan,
            "stalls": int((gaps > STALL_MS).sum()),
            "max_gap": float(gaps.max()),
            "cpu_ms_per_frame": 1000 * cpu_s / max(ages.size, 1),
            "cpu_pct": 100 * cpu_s / span,
            "decoded": f"{shown.width()}x{shown.height()}",
            "view": f"{view.width()}x{view.height()}@{view.devicePixelRatioF():g}",
            "recorded": recorded,
        }

    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    qInstallMessageHandler(qt_message)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(4, thread_name_prefix="bench-io")
    viewer = Viewer(ViewerOptions(urls=[args.url], model=args.model), executor)
    viewer.window.resize(*WINDOW_SIZE)
    viewer.live_ui.toolbar.in_flight.setValue(args.in_flight)
    viewer.live_ui.toolbar.loop.setChecked(True)
    viewer.live_ui.apply_options()
    obs = Observer()
    viewer.live.frame_shown.connect(obs.on_shown)
    overlays = {"frames": 0, "with_overlay": 0}
    view = viewer.window.view

    def count_overlays(_index: int, _age: float) -> None:
        # Checked as each frame is set: boxes and keypoints really drawn, not only decoded.
        overlays["frames"] += 1
        overlays["with_overlay"] += bool(view.box_items() or view.mask_items())

    viewer.live.frame_shown.connect(count_overlays)
    view.viewport().installEventFilter(obs)
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(obs.beat)
    profiler = cProfile.Profile() if args.profile else None
    try:
        viewer.window.show()
        viewer.start()
        viewer.live.open(str(video))
        heartbeat.start()
        if profiler is not None:
            profiler.enable()
        figures = loop.run_until_complete(measure(viewer, obs))
        if profiler is not None:
            profiler.disable()
        heartbeat.stop()
        started = time.monotonic()
        viewer.request_close()
        loop.run_until_complete(viewer.closed.wait())
        close_ms = (time.monotonic() - started) * 1000
        overlay_pct = 100.0 * overlays["with_overlay"] / max(overlays["frames"], 1)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
        asyncio.set_event_loop(None)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    recorded = f", while recording: {figures['recorded']}" if args.record else ""
    figures["detail"] = (
        f"load {figures['load']}, view {figures['view']}, decoded {figures['decoded']}, latency max "
        f"{figures['latency_max']:.0f} ms, paint p50 {figures['paint_p50']:.1f} ms, "
        f"{overlay_pct:.0f}% of frames shown with their face box, window closed in {close_ms:.0f} ms"
        f"{recorded}"
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=None, help="Triton gRPC HOST:PORT (default: an embedded server)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=1, help="measure each configuration this many times")
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--model", default="face_detector", help="the model to run (default: face_detector)")
    parser.add_argument(
        "--compare-with", type=Path, default=None, help="another checkout of the app, measured interleaved"
    )
    parser.add_argument("--video-dir", type=Path, default=None, help="keep (and reuse) the videos here")
    parser.add_argument("--profile", action="store_true", help="cProfile the GUI thread while measuring")
    parser.add_argument("--record", action="store_true", help="record the stream while measuring")
    parser.add_argument("--track", action="store_true", help="switch tracking on as the measuring starts")
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--app-root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--videos", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.warmup, args.rounds = 0.5, 0.2, 1
    if unknown := [name for name in args.configs.split(",") if name not in CONFIGS]:
        parser.error(f"unknown configuration {', '.join(unknown)}: use {', '.join(CONFIGS)}")
    # The app measured is the one under --app-root (this checkout unless --compare-with's).
    sys.path.insert(0, str(args.app_root))
    return child(args) if args.child else parent(args)


if __name__ == "__main__":
    raise SystemExit(main())
