"""`python -m app serve`: the embedded Triton server in the foreground."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.errors import ServerError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-repository",
        default=str(model_repository()),
        help="a standard Triton model repository (default: the bundled face detector)",
    )
    p.add_argument("--grpc-port", type=int, default=None, help="default: a free port")
    p.add_argument("--http-port", type=int, default=None, help="default: a free port")
    p.add_argument("--metrics-port", type=int, default=None, help="default: a free port")
    p.add_argument("--tritonserver", default=None, help="path of a tritonserver binary to use")


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Handlers first: a SIGTERM during start-up must still stop the child cleanly.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = EmbeddedServer(
        args.model_repository,
        tritonserver=args.tritonserver,
        grpc_port=args.grpc_port,
        http_port=args.http_port,
        metrics_port=args.metrics_port,
    )
    try:
        print("starting tritonserver ...", file=sys.stderr, flush=True)
        server.start()
        if stop.is_set():
            return 0
        names = ", ".join(m.name for m in server.models) or "(none)"
        print(f"models ready: {names}", file=sys.stderr, flush=True)
        print(f"grpc={server.grpc_url} http={server.http_url}", flush=True)
        while not stop.wait(0.5):
            if not server.running:
                print("error: tritonserver exited unexpectedly", file=sys.stderr)
                return 1
        return 0
    except ServerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        server.stop()
