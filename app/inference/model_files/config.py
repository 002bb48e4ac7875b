"""The Triton config of a model file, written from its inputs and outputs: a dynamic leading
axis on every tensor becomes max_batch_size with dynamic batching; other dynamic sizes stay -1
(the profile resolves them from the metadata, as for a hand-deployed model); the file's
metadata is kept in `parameters { key: "metadata" }` as Ultralytics' Triton guide writes it (a
Python dict repr, read back with ast.literal_eval)."""

from __future__ import annotations

import enum
from typing import Any

from app.inference.model_files.reading import ModelFile, TensorSpec
from app.inference.profiles.export_metadata import METADATA_PARAMETER

# What a generated model batches up to: enough for client batches and the dynamic batcher on a
# small machine, small enough that a batch of full-size images fits in memory.
MAX_BATCH_SIZE = 8


class Backend(enum.StrEnum):
    PYTHON = "python"  # the app's wrapper (resources/model_files), any Triton with Python
    ONNXRUNTIME = "onnxruntime"  # Triton's own ONNX backend (a stock Triton has it)


def _tensor(t: TensorSpec, batched: bool) -> dict[str, Any]:
    dims = t.shape[1:] if batched else t.shape
    return {"name": t.name, "data_type": t.data_type, "dims": [-1 if d is None else d for d in dims]}


def metadata_text(model: ModelFile) -> str:
    """The metadata parameter's text: the file's metadata as a Python dict repr ("" if none)."""
    return str(model.metadata) if model.metadata else ""


def triton_config(model: ModelFile, name: str, backend: Backend = Backend.PYTHON) -> dict[str, Any]:
    """The whole config (JSON-able; app.inference.introspection.model_config writes it as
    config.pbtxt or the JSON of a load request)."""
    if backend is Backend.ONNXRUNTIME and model.kind != "onnx":
        raise ValueError(f"the onnxruntime backend runs ONNX files, not {model.path.name}")
    batched = model.batch_dynamic
    config: dict[str, Any] = {
        "name": name,
        "backend": backend.value,
        "max_batch_size": MAX_BATCH_SIZE if batched else 0,
        "input": [_tensor(t, batched) for t in model.inputs],
        "output": [_tensor(t, batched) for t in model.outputs],
    }
    if backend is Backend.PYTHON:
        # One instance on the CPU: the wrapper runs onnxruntime on one thread (it shares the
        # machine). The onnxruntime backend keeps the server's choice (a GPU when there is one).
        config["instance_group"] = [{"kind": "KIND_CPU", "count": 1}]
    if batched:
        config["dynamic_batching"] = {}
    text = metadata_text(model)
    if text:
        config["parameters"] = {METADATA_PARAMETER: {"string_value": text}}
    return config


def upload_config(model: ModelFile, name: str) -> dict[str, Any]:
    """What an upload to a server's onnxruntime backend sends: the backend and the metadata;
    the server auto-completes inputs, outputs and batching from the file (its own reading)."""
    config: dict[str, Any] = {"name": name, "backend": Backend.ONNXRUNTIME.value}
    text = metadata_text(model)
    if text:
        config["parameters"] = {METADATA_PARAMETER: {"string_value": text}}
    return config


def labels_of(model: ModelFile) -> list[str]:
    """The class names of the metadata (`names`: a dict by id or a list), [] when none."""
    names = model.metadata.get("names")
    if isinstance(names, dict):
        try:
            by_id = {int(k): str(v) for k, v in names.items()}
        except (TypeError, ValueError):
            return []
        return [by_id.get(i, f"class {i}") for i in range(max(by_id) + 1)] if by_id else []
    if isinstance(names, list | tuple):
        return [str(n) for n in names]
    return []
