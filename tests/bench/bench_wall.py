"""Wall benchmark: the real viewer window playing several MJPG webcam-like videos at once, each
in a tile of the wall (File > Add camera…, the same capture path a camera uses), against the
face detector.

By default 4 streams of 640x480@30 and 2 of 1080p@30 (MJPG videos with a moving face, the size
of real cameras' JPEGs; looped). After a warm-up it measures for --seconds, per stream: the
frames shown (drawn in its tile) and their rate, the frames lost (not sent because the
stream's in-flight window was full, or never read because the reader fell behind the source),
capture-to-display latency p50/p95 (from the frame's capture, its decoding included, to its
picture set in the tile), the size frames were decoded at; and for the whole viewer process
its CPU time per frame shown, GUI heartbeat stalls (a 10 ms QTimer; a gap over 50 ms), and
how long closing the window with every stream in flight took. The viewer runs offscreen
unless QT_QPA_PLATFORM says otherwise (e.g. under xvfb-run), in a process of its own.

Run: .venv/bin/python tests/bench/bench_wall.py [--streams 640x480@30*4,1080p@30*2]
     [--seconds 30] [--warmup 5] [--in-flight 2] [--url HOST:PORT] [--model NAME] [--video-dir DIR]
--smoke: a few seconds in all (short videos, 0.5 s measured; what `make test` runs so the
script cannot rot).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STALL_MS = 50.0
WINDOW_SIZE = (1280, 800)
LOOP_SECONDS = 10  # the videos are this long and played in a loop
SIZES = {"640x480": (640, 480), "720p": (1280, 720), "1080p": (1920, 1080)}


@dataclass(frozen=True)
class Stream:
    name: str  # e.g. "640x480@30 #1"
    size: tuple[int, int]
    fps: int

    @property
    def config(self) -> str:
        return self.name.split(" ")[0]


def parse_streams(text: str) -> list[Stream]:
    """ "640x480@30*4,1080p@30*2" -> six streams."""
    streams = []
    for part in text.split(","):
        config, _, count = part.partition("*")
        size_name, _, fps = config.partition("@")
        if size_name not in SIZES or not fps.isdigit():
            raise SystemExit(f"unknown stream {part!r}: SIZE@FPS[*COUNT] with SIZE one of {', '.join(SIZES)}")
        for i in range(int(count or 1)):
            streams.append(Stream(f"{config} #{i + 1}", SIZES[size_name], int(fps)))
    return streams


# ----- the parent: videos, server, the measuring process ------------------------------------------


def make_videos(streams: list[Stream], folder: Path, smoke: bool) -> dict[str, str]:
    """One file per stream (copies of one video per configuration: each tile is named after it)."""
    from tests.media import make_webcam_video

    made: dict[str, Path] = {}
    videos = {}
    for stream in streams:
        w, h = stream.size
        original = folder / f"webcam-{w}x{h}-{stream.fps}{'-smoke' if smoke else ''}.avi"
        if stream.config not in made:
            if not original.exists():
                frames = 8 if smoke else LOOP_SECONDS * stream.fps
                print(f"writing {original.name} ({frames} frames)…", file=sys.stderr, flush=True)
                partial = original.with_suffix(".part.avi")
                make_webcam_video(partial, frames, stream.fps, stream.size)
                partial.rename(original)
            made[stream.config] = original
        number = stream.name.split("#")[1]
        copy = folder / f"cam{number}-{w}x{h}{'-smoke' if smoke else ''}.avi"
        if not copy.exists():
            try:
                os.link(original, copy)
            except OSError:
                shutil.copyfile(original, copy)
        videos[stream.name] = str(copy)
    return videos


def parent(args: argparse.Namespace) -> int:
    streams = parse_streams(args.streams)
    with ExitStack() as stack:
        folder = args.video_dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-wall-"))
        )
        folder.mkdir(parents=True, exist_ok=True)
        videos = make_videos(streams, folder, args.smoke)
        url = args.url
        if url is None:
            from app.resources import model_repository
            from app.server.embedded import EmbeddedServer

            print("starting the embedded server…", file=sys.stderr, flush=True)
            server = stack.enter_context(EmbeddedServer(model_repository()))
            url = server.grpc_url
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--url",
            url,
            "--streams",
            args.streams,
            "--videos",
            json.dumps(videos),
            "--seconds",
            str(args.seconds),
            "--warmup",
            str(args.warmup),
            "--in-flight",
            str(args.in_flight),
            "--model",
            args.model,
        ] + (["--profile"] if args.profile else [])
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"the measuring process exited {done.returncode}")
    result = next(json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT "))
    print_result(args, result)
    return 0


def print_result(args: argparse.Namespace, r: dict[str, Any]) -> None:
    print(
        f"wall of {len(r['streams'])} streams ({args.streams}), {args.model}, MJPG videos looped, "
        f"in-flight limit {args.in_flight} per stream, {os.cpu_count()} CPUs, "
        f"QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM', 'offscreen')}, "
        f"window {WINDOW_SIZE[0]}x{WINDOW_SIZE[1]}, "
        f"{r['seconds']:.1f} s after a {args.warmup:g} s warm-up, load {r['load']}"
    )
    print(
        f"{'stream':<14} {'decoded':>9} {'shown':>6} {'disp/s':>6} {'inf/s':>6} {'lost':>11} {'lost %':>6} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'not sent':>8} {'behind':>6}"
    )
    for s in r["streams"]:
        print(
            f"{s['name']:<14} {s['decoded']:>9} {s['shown']:6d} {s['display_fps']:6.1f} "
            f"{s['inference_fps']:6.1f} {s['lost']:>5.0f}/{s['source_frames']:<5.0f} {s['lost_pct']:6.1f} "
            f"{s['p50']:7.1f} {s['p95']:7.1f} {s['dropped']:8.0f} {s['behind']:6.1f}"
        )
    print(
        f"all streams: {r['shown']} frames shown ({r['display_fps']:.1f}/s), viewer CPU "
        f"{r['cpu_ms_per_frame']:.2f} ms per frame shown ({r['cpu_pct']:.0f}% of one core), "
        f"GUI stalls > {STALL_MS:.0f} ms: {r['stalls']} (longest gap {r['max_gap']:.0f} ms), "
        f"window closed with every stream in flight in {r['close_ms']:.0f} ms"
    )
    print(
        "lost: frames not sent (the stream's in-flight window was full) or never read (the reader "
        "fell behind the source), of the source's frames in the span; p50/p95: capture-to-display"
    )


# ----- the child: the viewer measuring -------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory(prefix="bench-wall-settings-") as settings:
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = settings
        figures = run_viewer(args, parse_streams(args.streams), json.loads(args.videos))
    print("RESULT " + json.dumps(figures), flush=True)
    return 0


def run_viewer(args: argparse.Namespace, streams: list[Stream], videos: dict[str, str]) -> dict[str, Any]:
    import asyncio
    import cProfile
    import pstats
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import qasync
    from PySide6.QtCore import QTimer, qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from app.ui.qt_app import IO_WORKERS, qt_message
    from app.ui.viewer import Viewer, ViewerOptions
    from app.ui.wall.wall_stream import WallStream

    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    qInstallMessageHandler(qt_message)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(IO_WORKERS, thread_name_prefix="bench-io")
    viewer = Viewer(ViewerOptions(urls=[args.url], model=args.model), executor)
    viewer.window.resize(*WINDOW_SIZE)
    bar = viewer.live_ui.toolbar
    bar.in_flight.setValue(args.in_flight)
    bar.loop.setChecked(True)
    shown: dict[str, list[tuple[float, float]]] = {s.name: [] for s in streams}  # (time, age ms)
    beats: list[float] = []
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(lambda: beats.append(time.monotonic()))

    def watch(stream: WallStream, name: str) -> None:
        stream.controller.frame_shown.connect(lambda _i, age: shown[name].append((time.monotonic(), age)))

    async def measure() -> dict[str, Any]:
        while viewer.connection.state != "connected":
            if viewer.connection.state == "failed":
                raise SystemExit("could not connect")
            await asyncio.sleep(0.05)
        tiles = {}
        for stream in streams:
            tile = viewer.wall_ui.add_source(videos[stream.name])
            if tile is None:
                raise SystemExit(f"{videos[stream.name]}: not opened")
            watch(tile, stream.name)
            tiles[stream.name] = tile
        while any(t.controller.meter.shown < 3 for t in tiles.values()):
            failed = [t.label for t in tiles.values() if t.controller.error]
            if failed:
                raise SystemExit(f"streams failed: {failed}")
            await asyncio.sleep(0.05)
        await asyncio.sleep(args.warmup)
        load0 = os.getloadavg()
        before = {name: t.controller.stats() for name, t in tiles.items()}
        cpu0, t0 = os.times(), time.monotonic()
        await asyncio.sleep(args.seconds)
        t1, cpu1 = time.monotonic(), os.times()
        after = {name: t.controller.stats() for name, t in tiles.items()}
        load1 = os.getloadavg()
        span = t1 - t0
        rows = []
        total = 0
        for stream in streams:
            b, a = before[stream.name], after[stream.name]
            if b is None or a is None or b.stream is None or a.stream is None:
                raise SystemExit(f"{stream.name}: not playing while measured")
            ages = np.array([age for t, age in shown[stream.name] if t0 <= t < t1])
            captured = a.capture.captured - b.capture.captured
            dropped = a.stream.dropped - b.stream.dropped
            source_frames = stream.fps * span
            behind = max(0.0, source_frames - captured)
            picture = tiles[stream.name].tile.view.shown_image()
            total += ages.size
            rows.append(
                {
                    "name": stream.name,
                    "decoded": f"{picture.width()}x{picture.height()}",
                    "shown": int(ages.size),
                    "display_fps": ages.size / span,
                    "inference_fps": (a.stream.completed - b.stream.completed) / span,
                    "dropped": dropped,
                    "behind": behind,
                    "lost": dropped + behind,
                    "source_frames": source_frames,
                    "lost_pct": 100 * (dropped + behind) / source_frames,
                    "p50": float(np.percentile(ages, 50)) if ages.size else float("nan"),
                    "p95": float(np.percentile(ages, 95)) if ages.size else float("nan"),
                }
            )
        cpu_s = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        beat_times = np.array([t for t in beats if t0 <= t < t1], np.float64)
        gaps = np.diff(beat_times) * 1000 if beat_times.size > 1 else np.zeros(1)
        started = time.monotonic()
        viewer.request_close()
        await viewer.closed.wait()
        return {
            "seconds": span,
            "load": f"{(load0[0] + load1[0]) / 2:.1f}",
            "streams": rows,
            "shown": total,
            "display_fps": total / span,
            "cpu_ms_per_frame": 1000 * cpu_s / max(total, 1),
            "cpu_pct": 100 * cpu_s / span,
            "stalls": int((gaps > STALL_MS).sum()),
            "max_gap": float(gaps.max()),
            "close_ms": (time.monotonic() - started) * 1000,
        }

    profiler = cProfile.Profile() if args.profile else None
    try:
        viewer.start()
        heartbeat.start()
        if profiler is not None:
            profiler.enable()
        figures = loop.run_until_complete(measure())
        if profiler is not None:
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(35)
        heartbeat.stop()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
        asyncio.set_event_loop(None)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=None, help="Triton gRPC HOST:PORT (default: an embedded server)")
    parser.add_argument(
        "--streams", default="640x480@30*4,1080p@30*2", help="SIZE@FPS*COUNT, comma-separated"
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--in-flight", type=int, default=2, help="each stream's in-flight window")
    parser.add_argument("--model", default="face_detector")
    parser.add_argument("--video-dir", type=Path, default=None, help="keep (and reuse) the videos here")
    parser.add_argument("--profile", action="store_true", help="cProfile the GUI thread (on stderr)")
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--videos", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.warmup = 0.5, 0.2
    sys.path.insert(0, str(ROOT))
    return child(args) if args.child else parent(args)


if __name__ == "__main__":
    raise SystemExit(main())
