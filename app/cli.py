"""The command line: `python -m app [sub-command] ...`; the viewer when no sub-command is given.

Each command lives in its own module under app/commands/ with `add_arguments(parser)`
and `run(args) -> int`; modules are imported only when their command runs, so
`serve` or `infer` never load Qt.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence
from types import ModuleType

from app import __version__, desktop_entry
from app.commands.interrupts import Terminated, termination_as_interrupt

SUBCOMMANDS = {
    "serve": ("app.commands.serve", "run the embedded Triton server in the foreground"),
    "models": ("app.commands.models", "list the models on a server and the detected profile"),
    "infer": ("app.commands.infer", "headless detection of images, folders and videos (JSON Lines out)"),
    "bench": ("app.commands.bench", "concurrency sweep: the app's pipeline vs a plain tritonclient loop"),
    "compare": ("app.commands.compare", "two models (or versions, or servers) on the same inputs, matched"),
}
VIEWER = "app.commands.gui"
SMOKE_TEST = "app.commands.smoke"


def _load(module: str) -> ModuleType:
    return importlib.import_module(module)


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of one command (None: the viewer)."""
    if command is None:
        parser = argparse.ArgumentParser(
            prog="triton-viewer",
            description="Triton Inference Viewer: live detections and request statistics for NVIDIA Triton. "
            f"Sub-commands: {', '.join(SUBCOMMANDS)} (see `triton-viewer COMMAND --help`).",
        )
        parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
        _load(VIEWER).add_arguments(parser)
        desktop_entry.add_arguments(parser)  # FILE arguments ("Open with"), --install-desktop-entry
        return parser
    module, help_text = SUBCOMMANDS[command]
    parser = argparse.ArgumentParser(prog=f"triton-viewer {command}", description=help_text)
    _load(module).add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--smoke-test" in args_list:
        module = _load(SMOKE_TEST)
        parser = argparse.ArgumentParser(prog="triton-viewer --smoke-test")
        module.add_arguments(parser)
        return _run_headless(module, parser.parse_args([a for a in args_list if a != "--smoke-test"]))
    command = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    parser = build_parser(command)
    if command is None:
        # Intermixed: FILE arguments may come before, between or after the options.
        args = parser.parse_intermixed_args(args_list)
        if (status := desktop_entry.handle(args)) is not None:
            return status
    else:
        args = parser.parse_args(args_list[1:])
    module = _load(SUBCOMMANDS[command][0] if command else VIEWER)
    if command is None:
        return int(module.run(args))  # the viewer turns signals into a close of its window
    return _run_headless(module, args)


def _run_headless(module: ModuleType, args: argparse.Namespace) -> int:
    """SIGTERM and SIGHUP stop a command like Ctrl-C: its clean-up and summary run. An
    interrupt its run() lets through (a second Ctrl-C during the clean-up) ends it without a
    traceback, with the shell's status for that signal."""
    try:
        with termination_as_interrupt():
            return int(module.run(args))
    except Terminated as e:
        return 128 + e.signum
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
