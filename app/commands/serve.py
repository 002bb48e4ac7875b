"""`python -m app serve`: the embedded Triton server in the foreground, supervised: started
again on the same ports if it dies (within its restart budget: 3 in 5 minutes)."""

from __future__ import annotations

import argparse
import sys

from app.commands.common import int_range, path_argument
from app.commands.interrupts import termination_as_interrupt
from app.inference.redaction import redact
from app.pipeline.connection.local_server import LocalServer
from app.pipeline.connection.supervisor import ServerSupervisor
from app.resources import bundled_models, model_repository
from app.server.errors import ServerError

port_argument = int_range("port", 1, 65535)


def _bundled() -> str:
    """e.g. "7 models: face_detector, face_landmark, ..." (as the folder holds them)."""
    names = bundled_models()
    return f"{len(names)} models: {', '.join(names)}" if names else "no models found"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-repository",
        type=path_argument,
        default=str(model_repository()),
        help=f"a standard Triton model repository (default: the bundled one, {_bundled()})",
    )
    p.add_argument("--grpc-port", type=port_argument, default=None, help="default: a free port")
    p.add_argument("--http-port", type=port_argument, default=None, help="default: a free port")
    p.add_argument("--metrics-port", type=port_argument, default=None, help="default: a free port")
    p.add_argument(
        "--tritonserver", type=path_argument, default=None, help="path of a tritonserver binary to use"
    )


def _say(text: str) -> None:
    print(redact(text), file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    # Installed before the server starts: SIGTERM or SIGHUP during start-up still stops the
    # child cleanly, like Ctrl-C.
    with termination_as_interrupt():
        local: LocalServer | None = None
        supervisor: ServerSupervisor | None = None
        try:
            ports = {
                "grpc_port": args.grpc_port,
                "http_port": args.http_port,
                "metrics_port": args.metrics_port,
            }
            local = LocalServer(
                args.model_repository, tritonserver=args.tritonserver, keep_ports=True, ports=ports
            )
            _say("starting tritonserver ...")
            local.ensure()
            server = local.server
            assert server is not None
            names = ", ".join(m.name for m in server.models) or "(none)"
            _say(f"models ready: {names}")
            print(
                f"grpc={server.grpc_url} http={server.http_url} metrics={server.metrics_address}", flush=True
            )
            supervisor = ServerSupervisor(local, _say).start()
            supervisor.wait()  # until it gives up (Ctrl-C, SIGTERM, SIGHUP interrupt the wait)
            _say("error: tritonserver keeps exiting; serve stops")
            return 1
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP
            return 0
        except ServerError as e:
            _say(f"error: {e}")
            return 2
        finally:
            if supervisor is not None:
                supervisor.stop()
            if local is not None:
                local.stop(timeout=8.0)
