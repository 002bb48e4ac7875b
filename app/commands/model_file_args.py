"""`--model PATH`: a model file (.onnx, .tflite) instead of a model name, on every command
that takes --model. The path is replaced by the model's name (the file's stem) before the
command runs; the embedded server serves the file from a repository of its own (written
here, beside the bundled one), a --url server gets it through the repository extension's
upload (app.inference.model_files.upload)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from app.inference.core.spec import SessionSpec
from app.inference.introspection.repository import RepositoryControl, RepositoryError
from app.inference.model_files.reading import ModelFileError, is_model_file_name, model_name_of


class ModelFileUsageError(Exception):
    """A model file that cannot be served (message names the file and the cause): exit 2."""


def take_model_files(args: argparse.Namespace) -> tuple[str, ...]:
    """The model files among args.model (a name or a list of them), each replaced there by
    the name its model gets; the files in order, once each."""
    value = getattr(args, "model", None)
    values = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    files: list[str] = []
    names: list[str] = []
    for item in values:
        if isinstance(item, str) and is_model_file_name(item):
            if not Path(item).is_file():
                raise ModelFileUsageError(f"--model {item}: no such model file")
            if item not in files:
                files.append(item)
            names.append(model_name_of(item))
        else:
            names.append(item)
    if files:
        args.model = names if isinstance(value, list) else names[0]
    return tuple(files)


def upload_model_files(spec: SessionSpec, *, note: Callable[[str], None]) -> None:
    """Every file of spec.model_files uploaded to spec's first server (a --url server: its
    onnxruntime backend first, else the app's Python-backend model)."""
    from app.inference.model_files.upload import serve_model_file

    if not spec.model_files:
        return
    control = RepositoryControl(spec.endpoints[0], spec.connection, timeout_s=spec.timeouts.request_s)
    try:
        for path in spec.model_files:
            try:
                name = serve_model_file(control, path, own_backend_first=True, note=note)
            except ModelFileError as e:
                raise ModelFileUsageError(str(e)) from None
            except RepositoryError as e:
                raise ModelFileUsageError(f"--model {path}: cannot load it on {control.url}: {e}") from None
            note(f"model file {path} loaded as '{name}' on {control.url}")
    finally:
        control.close()


@contextlib.contextmanager
def model_file_repository(files: tuple[str, ...], *, note: Callable[[str], None]) -> Iterator[Path | None]:
    """A model repository of the files' model folders (the Python-backend model: the embedded
    server has no onnxruntime backend), removed when the block ends; None without files.
    Named as the server's work folders are: a killed owner's is removed at a later start."""
    if not files:
        yield None
        return
    from app.inference.model_files.config import Backend
    from app.inference.model_files.save import save_model_folder
    from app.resources import bundled_models
    from app.server.embedded import WORKDIR_PREFIX
    from app.system.leftovers import owned_name

    bundled = set(bundled_models())
    for path in files:
        if model_name_of(path) in bundled:
            raise ModelFileUsageError(
                f"--model {path}: the embedded server has a bundled model named "
                f"'{model_name_of(path)}' already: copy the file under another name"
            )
    folder = Path(tempfile.mkdtemp(prefix=f"{owned_name(WORKDIR_PREFIX)}-files-"))
    try:
        for path in files:
            try:
                target = save_model_folder(path, folder, backend=Backend.PYTHON)
            except ModelFileError as e:
                raise ModelFileUsageError(str(e)) from None
            note(f"model file {path} served as '{target.name}'")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
