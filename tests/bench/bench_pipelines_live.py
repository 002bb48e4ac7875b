"""Live frame rate of the bundled two-stage models: a 30 fps video played in real time through
LiveRun (the viewer's live path without the window: capture thread, LiveJob with its in-flight
window, frames dropped while the window is full), each result tracked as the viewer does.

Prints, per model: results per second (the frame rate the live view shows), frames dropped,
capture-to-result latency p50 / p95.

Run: .venv/bin/python tests/bench/bench_pipelines_live.py [--seconds 30] [--warmup 5]
     [--in-flight 2] [--url HOST:PORT] [--models face_detector,face_mesh,person_pose]
Smoke mode (seconds): --seconds 2 --warmup 1
face_mesh and face_detector play a 640x480 face video, person_pose a 640x512 video of the
astronaut's upper body sliding across the frame.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from app.pipeline.live import LiveEvent, LiveOptions, LiveRun, frame_of
from app.pipeline.tracking import StreamTrackers
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from tests.media import make_face_video, make_person_video


def measure(
    url: str, model: str, video: Path, warmup: float, seconds: float, in_flight: int
) -> dict[str, float]:
    done: list[tuple[float, float]] = []  # (time, capture-to-result ms)
    lock = threading.Lock()
    trackers = StreamTrackers()
    measuring = threading.Event()

    def on_result(result: InferenceResult) -> None:
        tracked = trackers.track(result)  # what the viewer does with every live result
        if measuring.is_set() and tracked.ok:
            with lock:
                done.append((time.monotonic(), (time.monotonic() - frame_of(result).timestamp) * 1000))

    def on_event(event: LiveEvent, message: str) -> None:
        if event is not LiveEvent.END:
            print(f"  {model}: {event}: {message}", file=sys.stderr)

    with TritonSession(SessionSpec(endpoints=parse_endpoints(url), model=model)) as session:
        run = LiveRun(video, session, on_result, on_event, LiveOptions(max_in_flight=in_flight))
        run.start()
        time.sleep(warmup)
        before = run.stats()
        measuring.set()
        start = time.monotonic()
        time.sleep(seconds)
        measuring.clear()
        elapsed = time.monotonic() - start
        after = run.stats()
        run.stop()
    assert before.stream is not None and after.stream is not None
    offered = after.stream.offered - before.stream.offered
    dropped = after.stream.dropped - before.stream.dropped
    latencies = sorted(ms for _, ms in done)
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    return {
        "fps": len(done) / elapsed,
        "offered": offered,
        "dropped": dropped,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p95": p95,
    }


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
    parser.add_argument("--models", default="face_detector,face_mesh,person_pose")
    parser.add_argument(
        "--smoke", action="store_true", help="2 s per model after 1 s: checks the script runs"
    )
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.warmup = 2.0, 1.0
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    frames = int((args.warmup + args.seconds + 5) * 30)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-pipelines-")))
        print(f"writing {frames / 30:.0f} s 30 fps videos…", file=sys.stderr)
        face, person = tmp / "face.avi", tmp / "person.avi"
        make_face_video(face, frames=frames, fps=30, size=(640, 480))
        make_person_video(person, frames=frames, fps=30, size=(640, 512))
        url = args.url
        if url is None:
            print("starting the embedded server…", file=sys.stderr)
            url = stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        print(
            f"live, 30 fps video played in real time, in-flight window {args.in_flight}, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start; "
            f"{args.seconds:.0f} s measured after {args.warmup:.0f} s warm-up"
        )
        for model in models:
            video = person if model == "person_pose" else face
            f = measure(url, model, video, args.warmup, args.seconds, args.in_flight)
            print(
                f"  {model:14s} {f['fps']:5.1f} frames/s shown, {f['dropped']:.0f} of {f['offered']:.0f} "
                f"frames dropped, capture-to-result p50 {f['p50']:.0f} ms, p95 {f['p95']:.0f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
