"""What request tracing costs the requests it does not trace, and what it costs those it does.

    python tests/bench/bench_tracing.py [--requests 400] [--rounds 5] [--concurrency 8] [--url HOST:PORT]

Not a pytest module. One session at a time on the test model `slow_faces` (it answers at
once for a black image: the client's share of each request is then as large as it gets),
64x64 images, --concurrency requests in flight. Four modes, run in turn each round:

- off: no tracer (the session as it is without --trace);
- tracer idle: a tracer attached whose selection is used up ("trace the next 1", that one
  done): the requests are not traced; the client's cost of having tracing available;
- server tracing on: as idle, and the model's tracing left on at the server (what the
  other requests pay while the viewer traces the next N: Triton writes a file for each);
- all traced: every request traced, client and server (the price of a traced request).

Prints, per mode, the median over the rounds of the throughput and of the client's CPU per
request (this process's user + system time: the server is another process), and the
change against "off". --url: an existing server with the test models (tests/models);
default: an embedded server with slow_faces. --smoke: 20 requests, one round (seconds;
what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.inference.core.session import TritonSession  # noqa: E402
from app.inference.core.spec import Limits, SessionSpec  # noqa: E402
from app.inference.protocol import parse_endpoints, parse_url  # noqa: E402
from app.inference.result import InferenceResult, Status  # noqa: E402
from app.inference.tracing.settings import TRACE_ON  # noqa: E402
from app.inference.tracing.tracer import TraceSelection  # noqa: E402
from app.inference.transports.channel import ConnectionOptions  # noqa: E402
from app.inference.transports.open_channel import open_channel  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402

MODEL = "slow_faces"
MODES = ("off", "tracer idle", "server tracing on", "all traced")


def run_batch(session: TritonSession, images: list[np.ndarray]) -> None:
    done = threading.Semaphore(0)
    failed: list[str] = []

    def finished(result: InferenceResult) -> None:
        if result.status is not Status.OK:
            failed.append(str(result.error))
        done.release()

    for image in images:
        session.submit(image, finished)
    for _ in images:
        done.acquire()
    if failed:
        raise SystemExit(f"requests failed: {failed[:3]}")


def one_round(url: str, mode: str, images: list[np.ndarray], concurrency: int) -> tuple[float, float]:
    """(requests per second, client CPU ms per request) of `images` in one mode."""
    spec = SessionSpec(endpoints=parse_endpoints(url), model=MODEL, limits=Limits(max_in_flight=concurrency))
    with TritonSession(spec) as session:
        run_batch(session, images[:concurrency])  # warm-up (and the one request "next 1" traces)
        if mode != "off":
            tracer = session.start_tracing(TraceSelection.parse("all" if mode == "all traced" else "1"))
            if mode != "all traced":
                run_batch(session, images[:1])  # the one traced: the selection is used up
                deadline = time.monotonic() + 10
                while tracer.collector.waiting and time.monotonic() < deadline:
                    tracer.poll()
                    time.sleep(0.02)
            if mode == "server tracing on":
                assert session.tracer is not None and session.tracer.control is not None
                session.tracer.control.enable(MODEL)
        cpu0, t0 = time.process_time(), time.perf_counter()
        run_batch(session, images)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if session.tracer is not None:
            session.tracer.poll(flush=True)
    return len(images) / seconds, cpu * 1000 / len(images)


def ensure_tracing_off(url: str) -> Callable[[], None]:
    """Leave the model's trace settings as found, whatever a round left (an interrupted one)."""

    def restore() -> None:
        channel = open_channel(parse_url(url), ConnectionOptions())
        try:  # None: back to the server's own (global) setting
            channel.update_trace_settings(MODEL, dict.fromkeys(TRACE_ON), headers={}, timeout_s=5)
        finally:
            channel.close()

    return restore


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--url", help="an existing server with the test models (default: start one)")
    p.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = p.parse_args()
    if args.smoke:
        args.requests, args.rounds = 20, 1
    images = [np.zeros((64, 64, 3), np.uint8) for _ in range(args.requests)]
    with ExitStack() as stack:
        url = args.url
        if url is None:
            repo = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-tracing-")))
            (repo / MODEL).symlink_to(ROOT / "tests" / "models" / MODEL, target_is_directory=True)
            url = stack.enter_context(EmbeddedServer(repo)).grpc_url
        stack.callback(ensure_tracing_off(url))
        figures: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for _ in range(args.rounds):
            for mode in MODES:
                figures[mode].append(one_round(url, mode, images, args.concurrency))
    print(
        f"{args.requests} requests of {MODEL} 64x64, {args.concurrency} in flight, "
        f"median of {args.rounds} round(s):"
    )
    base_rate = statistics.median(f[0] for f in figures["off"])
    base_cpu = statistics.median(f[1] for f in figures["off"])
    for mode in MODES:
        rate = statistics.median(f[0] for f in figures[mode])
        cpu = statistics.median(f[1] for f in figures[mode])
        print(
            f"  {mode:<18} {rate:8.1f} req/s ({(rate / base_rate - 1) * 100:+.1f}%)  "
            f"client CPU {cpu:.3f} ms/request ({(cpu / base_cpu - 1) * 100:+.1f}%)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
