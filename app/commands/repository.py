"""`python -m app repository [--url URL] list | load NAME|FILE [--config FILE] | unload NAME |
config NAME | save FILE --to DIR`: Triton's model repository extension from the command line
(a thin adapter over app.inference.introspection.repository and app.inference.model_files)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator

from app.commands.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_connection_arguments,
    eprint,
    path_argument,
    serving,
    session_spec,
)
from app.inference.introspection.model_config import ConfigError, read_config_file
from app.inference.introspection.repository import (
    RepositoryControl,
    RepositoryError,
    RepositoryErrorKind,
)
from app.inference.model_files.config import Backend
from app.inference.model_files.reading import ModelFileError, is_model_file_name
from app.inference.model_files.save import save_model_folder
from app.inference.model_files.upload import serve_model_file
from app.model_states import ModelEntry


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_connection_arguments(p, repeatable_url=False)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every model of the repository: version, state, reason")
    listing.add_argument("--json", action="store_true", help="one JSON array instead of the table")
    load = actions.add_parser(
        "load",
        help="load a model (a loaded one is reloaded only if its files changed: Triton's rule), "
        "or load it with another config",
    )
    load.add_argument("name", metavar="NAME")
    load.add_argument(
        "--config",
        type=path_argument,
        default=None,
        metavar="FILE",
        help="config.pbtxt text or JSON to load the model with instead of the repository's file "
        "(the whole config; nothing is written on the server)",
    )
    load.epilog = (
        "NAME may be a model file (.onnx, .tflite): uploaded as a model named after the file "
        "(the server's onnxruntime backend, else the app's Python-backend model)"
    )
    save = actions.add_parser(
        "save",
        help="write a model file as a deployable model folder: DIR/NAME/config.pbtxt (inputs, "
        "outputs, batching, metadata), DIR/NAME/1/ with the file, DIR/NAME/labels.txt",
    )
    save.add_argument("name", metavar="FILE", help="the model file (.onnx, .tflite)")
    save.add_argument(
        "--to", required=True, metavar="DIR", help="the model repository to write the folder into"
    )
    save.add_argument(
        "--name", dest="model_name", default=None, help="the model's name (default: the file's stem)"
    )
    save.add_argument(
        "--backend",
        choices=[b.value for b in Backend],
        default=None,
        help="onnxruntime (default for .onnx: a stock Triton's own backend) or python (the app's "
        "wrapper running onnxruntime or tflite-runtime inside Triton's Python backend, as the "
        "embedded server serves it; default for .tflite)",
    )
    unload = actions.add_parser("unload", help="unload a model")
    unload.add_argument("name", metavar="NAME")
    config = actions.add_parser("config", help="the config the server runs a model with, as config.pbtxt")
    config.add_argument("name", metavar="NAME")
    config.add_argument("--json", action="store_true", help="JSON instead of config.pbtxt text")
    p.epilog = (
        "load and unload need a server started with --model-control-mode=explicit (the embedded "
        "server is); the others work on any Triton.\n"
        "exit status: 0 done, 1 the server refused the load (its reason on stderr), 2 usage, "
        "connection or model-control error"
    )


@contextlib.contextmanager
def _repository(args: argparse.Namespace) -> Iterator[RepositoryControl]:
    """The server this command talks to (the one place that reads the connection options)."""
    with (
        serving(session_spec(args)) as spec,
        RepositoryControl(spec.endpoints[0], spec.connection, timeout_s=args.timeout) as control,
    ):
        yield control


def format_index(entries: list[ModelEntry]) -> str:
    if not entries:
        return "(the repository is empty)\n"
    width = max(len("NAME"), *(len(e.name) for e in entries))
    rows = [f"{'NAME':<{width}}  {'VERSION':>7}  {'STATE':<11}  REASON"]
    for e in entries:
        reason = e.reason.replace("\n", " ")
        rows.append(f"{e.name:<{width}}  {e.version or '-':>7}  {e.state_text:<11}  {reason}".rstrip())
    return "\n".join(rows) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        override = read_config_file(args.config) if getattr(args, "config", None) else None
        if args.action == "save":
            return _save(args)
        with _repository(args) as repository:
            if args.action == "list":
                entries = repository.index()
                if args.json:
                    print(json.dumps([e.to_record() for e in entries], indent=2), flush=True)
                else:
                    print(format_index(entries), end="", flush=True)
            elif args.action == "config":
                config = repository.config(args.name)
                print(
                    json.dumps(config, indent=2) if args.json else repository.config_text(args.name),
                    flush=True,
                )
            elif args.action == "load" and is_model_file_name(args.name):
                _upload(repository, args, override)
            elif args.action == "load":
                repository.load(args.name, override)
                how = f" with the config of {args.config}" if override is not None else ""
                eprint(f"loaded '{args.name}'{how}")
            else:
                repository.unload(args.name)
                eprint(f"unloaded '{args.name}'")
        return EXIT_OK
    except RepositoryError as e:
        eprint(f"error: {e}")
        return EXIT_FAILED if e.kind is RepositoryErrorKind.LOAD_FAILED else EXIT_USAGE
    except (UsageError, ConfigError) as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        eprint("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... config NAME | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_OK


def _save(args: argparse.Namespace) -> int:
    backend = Backend(args.backend) if args.backend else None
    try:
        folder = save_model_folder(args.name, args.to, name=args.model_name, backend=backend)
    except ModelFileError as e:
        eprint(f"error: {e}")
        return EXIT_USAGE
    eprint(f"saved {args.name} as {folder} (serve it with: tritonserver --model-repository {args.to})")
    return EXIT_OK


def _upload(repository: RepositoryControl, args: argparse.Namespace, override: object) -> None:
    if override is not None:
        raise UsageError("--config: a model file's config is written from the file")
    try:
        name = serve_model_file(
            repository, args.name, own_backend_first=args.url is not None, note=lambda t: eprint(f"note: {t}")
        )
    except ModelFileError as e:
        raise UsageError(str(e)) from None
    eprint(f"loaded {args.name} as '{name}'")


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's flush at exit does not fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
