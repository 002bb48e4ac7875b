"""The command line: `python -m app [sub-command] ...` (the viewer when no sub-command is given)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from app import __version__
from app.commands import serve

SUBCOMMANDS = {"serve": serve}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="triton-viewer",
        description="Triton Inference Viewer: live detections and request statistics for NVIDIA Triton.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{serve}")
    for module in SUBCOMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (
        args_list[0] not in SUBCOMMANDS and args_list[0] not in ("-h", "--help", "--version")
    ):
        # The viewer is the default; until it exists, serve and say how to use the server.
        args_list = ["serve", *[a for a in args_list if a]]
    args = build_parser().parse_args(args_list)
    return int(args.func(args))
