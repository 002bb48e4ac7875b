"""A model file served by a Triton in explicit model-control mode, through the repository
extension's upload (`load_model(name, config=..., files=...)`): named after the file's stem.

On a server given by --url an ONNX file goes first to the server's own onnxruntime backend
with the config it auto-completes from the file; a server without that backend (the embedded
2.51 has only the Python one) refuses it, which is said once, and the file then goes with the
app's Python-backend wrapper (resources/model_files) and a config written from the file. The
embedded server gets the wrapper at once. A failed load is unloaded again: nothing
half-loaded stays on the server. Blocking: the CLI's main thread or the viewer's worker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from app.inference.introspection.repository import RepositoryControl, RepositoryError, RepositoryErrorKind
from app.inference.model_files.config import Backend, triton_config, upload_config
from app.inference.model_files.reading import ModelFileError, model_name_of, read_model_file
from app.resources import model_files_dir

# gRPC's message limit is 2 GiB; the file travels inside one load request with its config.
MAX_UPLOAD_BYTES = 2**31 - 2**20
# What Triton 2.51 says when a config names a backend it does not have (measured).
_NO_BACKEND = ("unable to find backend library", "unable to find 'libtriton_onnxruntime")


def _gb(size: int) -> str:
    return f"{size / 1e9:.1f} GB"


def check_upload_size(path: Path) -> None:
    """ModelFileError when the file is too big for one load request (told before reading it)."""
    size = path.stat().st_size
    if size > MAX_UPLOAD_BYTES:
        raise ModelFileError(
            f"model file {path}: {_gb(size)} is more than one load request can carry (gRPC's 2 GiB "
            "message limit): write a model folder with `repository save` and copy it into the "
            "server's model repository instead"
        )


def wrapper_code(kind: str) -> bytes:
    """The Python-backend model that runs a file of this kind (onnx, tflite)."""
    return (model_files_dir() / f"{kind}_model.py").read_bytes()


def serve_model_file(
    control: RepositoryControl,
    path: str | Path,
    *,
    own_backend_first: bool,
    note: Callable[[str], None] = lambda _text: None,
) -> str:
    """Load the file on the server as a model; its name. `own_backend_first`: try the server's
    onnxruntime backend before the wrapper (a server given by --url). ModelFileError naming
    the file and the cause; RepositoryError when the server cannot load models at all."""
    p = Path(path)
    if not p.is_file():
        raise ModelFileError(f"model file {p}: no such file")
    check_upload_size(p)
    model = read_model_file(p)  # refused here (not a model, truncated, unknown op) before any upload
    name = model_name_of(p)
    data = p.read_bytes()
    if own_backend_first and model.kind == "onnx":
        try:
            _load(control, name, upload_config(model, name), {f"1/{model.file_name}": data})
            return name
        except RepositoryError as e:
            if e.kind is not RepositoryErrorKind.LOAD_FAILED or not _backend_missing(str(e)):
                raise _refused(p, control, e) from None
            note(
                f"the server at {control.url} has no onnxruntime backend: {p.name} is served by "
                "the app's Python-backend model, which runs onnxruntime inside Triton's Python backend"
            )
    files = {f"1/{model.file_name}": data, "1/model.py": wrapper_code(model.kind)}
    try:
        _load(control, name, triton_config(model, name, Backend.PYTHON), files)
    except RepositoryError as e:
        raise _refused(p, control, e) from None
    return name


def _load(control: RepositoryControl, name: str, config: dict, files: dict[str, bytes]) -> None:
    try:
        control.load(name, config, files=files)
    except BaseException:
        # A refused (or interrupted) load may leave a model of that name half there: remove it.
        with contextlib.suppress(RepositoryError):
            control.unload(name)
        raise


def _backend_missing(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _NO_BACKEND)


def _refused(path: Path, control: RepositoryControl, error: RepositoryError) -> Exception:
    if error.kind is RepositoryErrorKind.LOAD_FAILED:
        return ModelFileError(f"model file {path}: the server at {control.url} could not load it: {error}")
    return error
