"""`python -m app zones check FILE` and `python -m app zones export --to deepstream FILE`: a
zones file (lines and zones of one source) checked, or written as another tool's configuration
(a thin adapter over app.analytics). No server is needed."""

from __future__ import annotations

import argparse
import json
import sys

from app.analytics.deepstream import ExportError, export_nvdsanalytics
from app.analytics.zones_file import ZonesConfig, ZonesFileError, load_zones
from app.commands.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError, eprint
from app.commands.outputs import check_file_output, write_output
from app.system.atomic_files import write_whole

TARGETS = ("deepstream",)


def size_argument(text: str) -> tuple[int, int]:
    """WIDTHxHEIGHT in whole pixels, e.g. 1920x1080."""
    parts = text.lower().replace(" ", "").split("x")
    if len(parts) == 2 and all(p.isdigit() and int(p) > 0 for p in parts):
        return int(parts[0]), int(parts[1])
    raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels (e.g. 1920x1080), got {text!r}")


def class_ids_argument(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected class ids separated by commas, got {text!r}") from None
    if not ids or any(i < -1 for i in ids):
        raise argparse.ArgumentTypeError(f"expected class ids 0 or more (or -1: every class), got {text!r}")
    return ids


def add_arguments(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="read a zones file: its lines and zones, or what is wrong")
    check.add_argument("file", metavar="FILE", help="the zones file (JSON)")
    check.add_argument(
        "--size", type=size_argument, default=None, metavar="WxH", help="warn of points outside this frame"
    )
    export = actions.add_parser("export", help="write a zones file as another tool's configuration")
    export.add_argument("file", metavar="FILE", help="the zones file (JSON)")
    export.add_argument(
        "--to", choices=TARGETS, required=True, help="deepstream: an nvdsanalytics config file"
    )
    export.add_argument(
        "--size",
        type=size_argument,
        default=None,
        metavar="WxH",
        help="the source's size, which the coordinates are in (default: the file's \"size\")",
    )
    export.add_argument("--stream", type=int, default=0, metavar="N", help="the DeepStream stream index (0)")
    export.add_argument(
        "--class-id",
        type=class_ids_argument,
        default=[-1],
        metavar="IDS",
        help="the classes the rules apply to, separated by commas (default -1: every class)",
    )
    export.add_argument("--output", default=None, metavar="FILE", help="the file to write (default: stdout)")
    p.epilog = (
        'the zones file: {"lines": [{"name", "a": [x, y], "b": [x, y]}], "zones": [{"name", '
        '"polygon": [[x, y], ...]}]} in the source\'s pixels (docs/analytics.md)'
    )


def run(args: argparse.Namespace) -> int:
    try:
        config = _load(args.file)
        if args.action == "check":
            return _check(config, args.file, args.size)
        return _export(config, args)
    except UsageError as e:
        eprint(f"error: {e}")
        return EXIT_USAGE


def _load(path: str) -> ZonesConfig:
    try:
        return load_zones(path)
    except ZonesFileError as e:
        raise UsageError(str(e)) from None


def _check(config: ZonesConfig, path: str, size: tuple[int, int] | None) -> int:
    size = size or config.size
    warnings = config.outside(*size) if size else []
    summary = {
        "file": path,
        "lines": [line.name for line in config.lines],
        "zones": [zone.name for zone in config.zones],
        "size": list(size) if size else None,
        "warnings": warnings,
    }
    for warning in warnings:
        eprint(f"warning: {path}: {warning}")
    print(json.dumps(summary))
    return EXIT_OK


def _export(config: ZonesConfig, args: argparse.Namespace) -> int:
    try:
        exported = export_nvdsanalytics(
            config, size=args.size, stream=args.stream, class_ids=args.class_id, origin=args.file
        )
    except ExportError as e:
        raise UsageError(str(e)) from None
    size = args.size or config.size
    assert size is not None  # the export needs it, and said so
    for warning in config.outside(*size):
        eprint(f"warning: {args.file}: {warning}")
    for note in exported.notes:
        eprint(f"note: {note}")
    if args.output is None:
        sys.stdout.write(exported.text)
        return EXIT_OK
    check_file_output("--output", args.output)
    ok = write_output("--output", args.output, lambda: write_whole(args.output, exported.text))
    if ok:
        eprint(f"nvdsanalytics configuration written to {args.output}")
    return EXIT_OK if ok else EXIT_FAILED
