"""The viewer (default command): the desktop window."""

from __future__ import annotations

import argparse

from app.commands.common import (
    EXIT_USAGE,
    UsageError,
    add_security_arguments,
    add_speed_arguments,
    connection_options,
    eprint,
    path_argument,
    profile_overrides,
)
from app.inference.transports.transport import TransportKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="URL",
        help="server address: HOST:PORT (gRPC) or http://HOST:PORT (HTTP/REST), Triton or any "
        "KServe v2 server (repeatable); default: start the bundled local server",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="model to use (default: face_detector or the only one), or a model file (.onnx, "
        ".tflite): loaded on the server once connected",
    )
    parser.add_argument(
        "--profile",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="TOML profile for the model (how to feed it and read its outputs; see the README); "
        "Model > Profile… chooses one in the window and remembers it per model",
    )
    parser.add_argument(
        "--labels", type=path_argument, default=None, metavar="FILE", help="class names, one per line"
    )
    parser.add_argument(
        "--open",
        type=path_argument,
        action="append",
        default=[],
        metavar="PATH",
        help="image or folder to open (repeatable)",
    )
    parser.add_argument(
        "--camera",
        type=path_argument,
        action="append",
        default=[],
        metavar="SOURCE",
        help="camera index, video file or stream URL: play it live with the detections once "
        "connected; repeatable: several play at once, each in a tile of a wall (double-click "
        "one for the single view, Esc back)",
    )
    parser.add_argument(
        "--screenshot",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="once everything opened has its results (with --camera: after the first 30 annotated "
        "frames), save a PNG of the window and exit",
    )
    parser.add_argument(
        "--tritonserver", type=path_argument, default=None, metavar="PATH", help="tritonserver binary to use"
    )
    parser.add_argument(
        "--metrics-url",
        default=None,
        metavar="HOST:PORT",
        help="Triton's Prometheus metrics for the Server view (View > Server) of a server given by "
        "--url (default: its host on port 8002; the local server's own port otherwise)",
    )
    add_security_arguments(parser)
    add_speed_arguments(parser, remembered=True)


def single_camera(cameras: list[str]) -> str | None:
    """One --camera plays in the single live view."""
    return cameras[0] if len(cameras) == 1 else None


def wall_cameras(cameras: list[str]) -> list[str]:
    """Several --camera play at once, each in a tile of the wall."""
    return list(cameras) if len(cameras) > 1 else []


def run(args: argparse.Namespace) -> int:
    # Qt is imported only when the viewer runs (the other commands never load it).
    from app.ui.qt_app import run_viewer
    from app.ui.viewer import ViewerOptions

    try:
        connection = connection_options(args)
        overrides = profile_overrides(args)  # read and checked now: a bad file is a usage error
    except UsageError as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    options = ViewerOptions(
        urls=list(args.url),
        model=args.model,
        open_paths=list(args.open),
        camera=single_camera(args.camera),
        cameras=wall_cameras(args.camera),
        screenshot=args.screenshot,
        tritonserver=args.tritonserver,
        connection=connection,
        transport=TransportKind(args.transport) if args.transport else None,
        client_batch=args.client_batch,
        batch_delay_ms=args.batch_delay_ms,
        profile_overrides=overrides,
        metrics_url=args.metrics_url,
    )
    return run_viewer(options)
