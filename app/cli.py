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
from collections.abc import Callable, Sequence
from types import ModuleType

from app import __version__, desktop_entry
from app.commands.interrupts import Terminated, termination_as_interrupt
from app.inference.redaction import redact_logs

SUBCOMMANDS = {
    "serve": (
        "app.commands.serve",
        "run the embedded Triton server in the foreground: the bundled models, or your repository",
    ),
    "models": ("app.commands.models", "list the models on a server and the detected profile"),
    "infer": (
        "app.commands.infer",
        "headless detection of images, folders, videos (JSON Lines, COCO, YOLO, VOC, labelme)",
    ),
    "bench": ("app.commands.bench", "concurrency sweep: the app's pipeline vs a plain tritonclient loop"),
    "compare": ("app.commands.compare", "two models (or versions, or servers) on the same inputs, matched"),
    "repository": (
        "app.commands.repository",
        "the server's models: states and reasons, load (with another config), unload, config",
    ),
    "tune": (
        "app.commands.tune",
        "server-config search: instances, max batch, dynamic batching, swept on your own images",
    ),
    "evaluate": (
        "app.commands.evaluate",
        "accuracy against labelled data (COCO, YOLO, VOC, labelme): mAP, per class, confusion, speed",
    ),
    "zones": (
        "app.commands.zones",
        "counting lines and zones (infer --zones): check a zones file, export it for DeepStream",
    ),
}
EXAMPLES = {
    None: """\
examples:
  triton-viewer                                    the viewer, with the bundled server and models
  triton-viewer --open photos/                     open a folder of images at start
  triton-viewer --url my-triton:8001 --model my_yolo
  triton-viewer --camera 0                         live preview of the first camera
  triton-viewer infer photos/ > detections.jsonl   headless detection, JSON Lines
  triton-viewer infer --format coco --output detections.json photos/
  triton-viewer models --url my-triton:8001        what the server has and what the viewer understood
  triton-viewer bench --concurrency 1,2,4,8        how throughput and latency grow with load""",
    "infer": """\
examples:
  triton-viewer infer photos/ > detections.jsonl
  triton-viewer infer --url my-triton:8001 --model my_yolo --concurrency 16 photos/ clip.mp4
  triton-viewer infer --format coco --output detections.json photos/
  triton-viewer infer --format yolo --output labels/ photos/      (labels/photo.txt, labels/classes.txt)
  triton-viewer infer --format voc --output annotations/ photos/  (annotations/photo.xml)
  triton-viewer infer --format labelme --output photos/ photos/   (photo.json beside photo.jpg)
  triton-viewer infer --track --zones door.json --heatmap heat.png clip.mp4  (counts, dwell, heat map)

exit status: 0 all inputs succeeded, 1 some failed, 2 usage or connection error, 130 interrupted""",
    "models": """\
examples:
  triton-viewer models
  triton-viewer models --url my-triton:8001 --model my_yolo --profile my_yolo.toml""",
    "bench": """\
examples:
  triton-viewer bench
  triton-viewer bench --url my-triton:8001 --concurrency 1,4,16 --requests 500 --output bench.json""",
    "compare": """\
examples:
  triton-viewer compare --model face_detector --model face_detector_v2 photos/
  triton-viewer compare --model my_yolo --version-a 1 --version-b 2 photos/ clip.mp4
  triton-viewer compare --url old-triton:8001 --url-b new-triton:8001 --model my_yolo photos/""",
    "repository": """\
examples:
  triton-viewer repository --url my-triton:8001 list
  triton-viewer repository --url my-triton:8001 config my_yolo > config.pbtxt
  triton-viewer repository --url my-triton:8001 load my_yolo --config tuned/my_yolo/config.pbtxt
  triton-viewer repository --url my-triton:8001 unload my_yolo""",
    "tune": """\
examples:
  triton-viewer tune --url my-triton:8001 --model my_yolo --image photos/
  triton-viewer tune --url my-triton:8001 --model my_yolo --instances 1,2 --queue-delay-us off,0,2000 \\
      --latency-budget-ms 50 --write-config tuned/ --output tune.json

exit status: 0 done, 1 some trial failed to load (the others still ran), 2 usage or connection
error, 130 interrupted (the model's original config is restored in every case)""",
    "evaluate": """\
examples:
  triton-viewer evaluate val/ --model my_yolo --output report.json        (format told from the files)
  triton-viewer evaluate instances_val.json --images val2017/ --model my_yolo --plots plots/
  triton-viewer evaluate labels/ --images photos/ --format yolo --model face_detector
  triton-viewer evaluate data/ --model yolo_fp32 --model yolo_int8       (both, and B - A per class)
  triton-viewer evaluate faces/ --model face_detector --iou-type keypoints""",
    "zones": """\
examples:
  triton-viewer zones check door.json --size 1920x1080
  triton-viewer zones export --to deepstream door.json --size 1920x1080 --output config_nvdsanalytics.txt
  triton-viewer infer --track --zones door.json --heatmap heat.png clip.mp4 > events.jsonl""",
    "serve": """\
examples:
  triton-viewer serve
  triton-viewer serve --model-repository my_models/ --grpc-port 8001 --http-port 8000""",
}
VIEWER = "app.commands.gui"
SMOKE_TEST = "app.commands.smoke"


def _load(module: str) -> ModuleType:
    return importlib.import_module(module)


def command_listing() -> str:
    """The commands and what each does, in two aligned columns (the longest name sets the width)."""
    width = max(len(name) for name in SUBCOMMANDS)
    return "\n".join(f"  {name:<{width}}  {text}" for name, (_module, text) in SUBCOMMANDS.items())


def build_parser(command: str | None) -> argparse.ArgumentParser:
    """The parser of one command (None: the viewer)."""
    if command is None:
        listing = command_listing()
        parser = argparse.ArgumentParser(
            prog="triton-viewer",
            usage="triton-viewer [COMMAND] [options]",
            description="Triton Inference Viewer: live detections and request statistics for NVIDIA\n"
            "Triton. Without a command: the desktop viewer (its options below).\n\n"
            f"commands (each with its own --help, e.g. `triton-viewer infer --help`):\n{listing}",
            epilog=EXAMPLES[None],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
        _load(VIEWER).add_arguments(parser)
        desktop_entry.add_arguments(parser)  # FILE arguments ("Open with"), --install-desktop-entry
        return parser
    module, help_text = SUBCOMMANDS[command]
    parser = argparse.ArgumentParser(
        prog=f"triton-viewer {command}",
        description=help_text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _load(module).add_arguments(parser)
    # After the command's own epilog (if it has one), the examples.
    parser.epilog = "\n\n".join(part for part in (parser.epilog, EXAMPLES.get(command)) if part)
    return parser


def smoke_test_parser() -> argparse.ArgumentParser:
    """The parser of `triton-viewer --smoke-test` (the packaged build's self-check)."""
    parser = argparse.ArgumentParser(prog="triton-viewer --smoke-test")
    _load(SMOKE_TEST).add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    redact_logs()  # a logged error or traceback on stderr carries no header value or password
    if "--smoke-test" in args_list:
        parser = smoke_test_parser()
        args = parser.parse_args([a for a in args_list if a != "--smoke-test"])
        return run_headless(_load(SMOKE_TEST).run, args)
    command = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    parser = build_parser(command)
    if command is None:
        # Intermixed: FILE arguments may come before, between or after the options.
        args = parser.parse_intermixed_args(args_list)
        if (status := desktop_entry.handle(args, list(SUBCOMMANDS))) is not None:
            return status
    else:
        args = parser.parse_args(args_list[1:])
    module = _load(SUBCOMMANDS[command][0] if command else VIEWER)
    if command is None:
        return int(module.run(args))  # the viewer turns signals into a close of its window
    return run_headless(module.run, args)


def run_headless(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command's `run(args)`: SIGTERM and SIGHUP stop it like Ctrl-C (its clean-up and
    summary run). An interrupt it lets through (a second Ctrl-C during the clean-up) ends it
    without a traceback, with the shell's status for that signal."""
    try:
        with termination_as_interrupt():
            return int(run(args))
    except Terminated as e:
        return 128 + e.signum
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
