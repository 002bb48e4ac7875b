"""Live compare vs live single: does sending every frame to a second model lower A's frame rate?

Starts the embedded server (or uses --url), writes a 640x480 30 fps face video, runs the real
viewer (offscreen unless QT_QPA_PLATFORM says otherwise, e.g. under xvfb-run) and alternates,
for --rounds rounds: the live preview with model A alone (frames drawn per second in the main
view), then the compare window with A and B on the same video (pairs drawn per second: each
shows A's result, with B's or marked without it). Each phase plays the video looped for
--seconds after a --warmup. Prints the display rates, the requests per second sent to the
server, and the ratio compare / single of A's displayed frame rate.

Run: QT_QPA_PLATFORM=xcb xvfb-run -a .venv/bin/python tests/bench/bench_compare_live.py
     [--seconds 20] [--warmup 3] [--rounds 2] [--model-a face_detector] [--model-b face_detector]
--smoke: one round of 0.5 s after a 0.2 s warm-up on a short video (seconds; what `make test`
runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import qasync
from PySide6.QtWidgets import QApplication

from app.pipeline.compare import Side
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.ui.compare.compare_window import CompareChoice
from app.ui.viewer import Viewer, ViewerOptions
from tests.media import make_face_video


async def wait_for(condition: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        await asyncio.sleep(0.05)


async def single(viewer: Viewer, video: Path, warmup: float, seconds: float) -> dict[str, float]:
    shown: list[float] = []
    viewer.live.frame_shown.connect(lambda _i, _age: shown.append(time.monotonic()))
    viewer.live.open(str(video))
    await wait_for(lambda: len(shown) >= 10)
    await asyncio.sleep(warmup)
    session = viewer.connection.session
    assert session is not None
    sent0, t0 = session.stats.snapshot().sent, time.monotonic()
    await asyncio.sleep(seconds)
    sent1, t1 = session.stats.snapshot().sent, time.monotonic()
    viewer.live.stop()
    await wait_for(lambda: viewer.live.idle)
    viewer.live.frame_shown.disconnect()
    n = sum(1 for t in shown if t0 <= t < t1)
    return {"display_fps": n / (t1 - t0), "requests_per_s": (sent1 - sent0) / (t1 - t0)}


async def compare(viewer: Viewer, video: Path, warmup: float, seconds: float) -> dict[str, float]:
    c = viewer.analysis.compare
    shown: list[float] = []
    c.pair_shown.connect(lambda _i, _age: shown.append(time.monotonic()))
    c.open_video(str(video))
    await wait_for(lambda: len(shown) >= 10)
    await asyncio.sleep(warmup)
    a, b = c.sessions[Side.A], c.sessions[Side.B]
    sent0 = a.stats.snapshot().sent + b.stats.snapshot().sent
    complete0, late0, t0 = c.pairer.complete, c.pairer.late, time.monotonic()
    await asyncio.sleep(seconds)
    sent1 = a.stats.snapshot().sent + b.stats.snapshot().sent
    complete1, late1, t1 = c.pairer.complete, c.pairer.late, time.monotonic()
    c.stop()
    await wait_for(lambda: c.live is None)
    c.pair_shown.disconnect()
    n = sum(1 for t in shown if t0 <= t < t1)
    return {
        "display_fps": n / (t1 - t0),
        "requests_per_s": (sent1 - sent0) / (t1 - t0),
        "complete": complete1 - complete0,
        "late": late1 - late0,
    }


Figures = dict[str, float]


async def bench(viewer: Viewer, args: argparse.Namespace, video: Path) -> list[tuple[Figures, Figures]]:
    await wait_for(lambda: viewer.connection.state == "connected")
    session = viewer.connection.session
    assert session is not None
    viewer.live.options.loop = True
    viewer.analysis.compare.live_options.loop = True
    ok = await viewer.analysis.start_compare(CompareChoice(args.model_a, "", args.model_b, "", []), session)
    if not ok:
        raise SystemExit("could not open the two models")
    rounds = []
    for _ in range(args.rounds):
        s = await single(viewer, video, args.warmup, args.seconds)
        c = await compare(viewer, video, args.warmup, args.seconds)
        rounds.append((s, c))
    return rounds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=None)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model-a", default="face_detector")
    parser.add_argument("--model-b", default="face_detector")
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.warmup, args.rounds = 0.5, 0.2, 1
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-compare-")))
        os.environ["TRITON_VIEWER_SETTINGS_DIR"] = str(tmp / "settings")
        video = tmp / "face.mp4"
        frames = 30 if args.smoke else 300  # looped
        print(f"writing a {frames / 30:.0f} s 640x480 30 fps face video…", file=sys.stderr)
        make_face_video(video, frames=frames, fps=30, size=(640, 480))
        url = args.url
        if url is None:
            print("starting the embedded server…", file=sys.stderr)
            url = stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        app = QApplication.instance() or QApplication([sys.argv[0]])
        assert isinstance(app, QApplication)
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        executor = ThreadPoolExecutor(4, thread_name_prefix="bench-io")
        viewer = Viewer(ViewerOptions(urls=[url], model=args.model_a), executor)
        try:
            viewer.window.show()
            viewer.start()
            rounds = loop.run_until_complete(bench(viewer, args, video))
            viewer.request_close()
            loop.run_until_complete(viewer.closed.wait())
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
            loop.close()
    load = os.getloadavg()
    print(
        f"live compare vs live single, {args.model_a} vs {args.model_b}, 640x480 30 fps video, in flight 2 "
        f"per stream, {os.cpu_count()} CPUs, QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM')}, "
        f"load average after the run {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    for i, (s, c) in enumerate(rounds, 1):
        print(
            f"  round {i}: single: A displayed {s['display_fps']:5.1f} fps, "
            f"{s['requests_per_s']:5.1f} req/s | compare: A displayed {c['display_fps']:5.1f} fps, "
            f"{c['requests_per_s']:5.1f} req/s ({c['complete']:.0f} pairs complete, "
            f"{c['late']:.0f} drawn with one side missing) | "
            f"ratio {c['display_fps'] / s['display_fps']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
