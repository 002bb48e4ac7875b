"""A model file written as a deployable Triton model folder (`repository save`):
`DIR/NAME/config.pbtxt` (inputs, outputs, batching, the metadata parameter), `DIR/NAME/1/`
with the file (and, for the Python backend, the app's wrapper as model.py), and
`DIR/NAME/labels.txt` when the metadata names the classes. DIR is a model repository: a Triton
started on it serves the model as it is (a stock Triton with the onnxruntime backend, or any
Triton whose Python backend has onnxruntime / tflite-runtime, such as the embedded server)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from app.inference.introspection.model_config import to_pbtxt
from app.inference.model_files.config import Backend, labels_of, triton_config
from app.inference.model_files.reading import ModelFileError, model_name_of, read_model_file
from app.resources import model_files_dir


def default_backend(path: str | Path) -> Backend:
    """onnxruntime for an ONNX file (what a stock Triton has), Python for the others."""
    return Backend.ONNXRUNTIME if Path(path).suffix.lower() == ".onnx" else Backend.PYTHON


def save_model_folder(
    path: str | Path, repository: str | Path, *, name: str | None = None, backend: Backend | None = None
) -> Path:
    """The model folder written under `repository` (created if needed); ModelFileError naming
    the file, or the folder when it exists already. Written whole or not at all (a staging
    folder renamed at the end)."""
    model = read_model_file(path)
    name = name or model_name_of(path)
    backend = backend or default_backend(path)
    try:
        config = triton_config(model, name, backend)
    except ValueError as e:
        raise ModelFileError(f"model file {path}: {e}") from None
    root = Path(repository)
    target = root / name
    if target.exists():
        raise ModelFileError(f"{target} exists already: remove it, or save under another --name")
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    except OSError as e:
        raise ModelFileError(f"cannot write to {root}: {e.strerror or e}") from None
    try:
        (staging / "1").mkdir()
        shutil.copyfile(model.path, staging / "1" / model.file_name)
        if backend is Backend.PYTHON:
            shutil.copyfile(model_files_dir() / f"{model.kind}_model.py", staging / "1" / "model.py")
        (staging / "config.pbtxt").write_text(to_pbtxt(config).rstrip("\n") + "\n", encoding="utf-8")
        labels = labels_of(model)
        if labels:
            (staging / "labels.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
        staging.chmod(0o755)
        staging.rename(target)
    except OSError as e:
        raise ModelFileError(f"cannot write {target}: {e.strerror or e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
