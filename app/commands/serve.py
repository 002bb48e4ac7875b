"""`python -m app serve`: the embedded Triton server in the foreground."""

from __future__ import annotations

import argparse
import sys
import time

from app.commands.common import path_argument
from app.commands.interrupts import termination_as_interrupt
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.errors import ServerError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-repository",
        type=path_argument,
        default=str(model_repository()),
        help="a standard Triton model repository (default: the bundled face detector)",
    )
    p.add_argument("--grpc-port", type=int, default=None, help="default: a free port")
    p.add_argument("--http-port", type=int, default=None, help="default: a free port")
    p.add_argument("--metrics-port", type=int, default=None, help="default: a free port")
    p.add_argument(
        "--tritonserver", type=path_argument, default=None, help="path of a tritonserver binary to use"
    )


def run(args: argparse.Namespace) -> int:
    # Installed before the server starts: SIGTERM or SIGHUP during start-up still stops the
    # child cleanly, like Ctrl-C.
    with termination_as_interrupt():
        server: EmbeddedServer | None = None
        try:
            server = EmbeddedServer(
                args.model_repository,
                tritonserver=args.tritonserver,
                grpc_port=args.grpc_port,
                http_port=args.http_port,
                metrics_port=args.metrics_port,
            )
            print("starting tritonserver ...", file=sys.stderr, flush=True)
            server.start()
            names = ", ".join(m.name for m in server.models) or "(none)"
            print(f"models ready: {names}", file=sys.stderr, flush=True)
            print(f"grpc={server.grpc_url} http={server.http_url}", flush=True)
            while server.running:
                time.sleep(0.5)
            print("error: tritonserver exited unexpectedly", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP
            return 0
        except ServerError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            if server is not None:
                server.stop()
