"""A model file (`.onnx`, `.tflite`) read on the client: its inputs and outputs, its metadata,
and whether it runs at all here, before anything is sent to a server (a file that is not a
model, truncated, or uses an operator the runtime lacks is refused with its name and cause).

ONNX files are read with onnxruntime (the runtime that serves them: a file it cannot open
would fail on the server too), TFLite files with tflite-runtime.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_FILE_SUFFIXES = (".onnx", ".tflite")

# onnxruntime's element types -> Triton's (model_config.proto's DataType names).
_ONNX_TYPES = {
    "tensor(float)": "TYPE_FP32",
    "tensor(float16)": "TYPE_FP16",
    "tensor(double)": "TYPE_FP64",
    "tensor(uint8)": "TYPE_UINT8",
    "tensor(uint16)": "TYPE_UINT16",
    "tensor(uint32)": "TYPE_UINT32",
    "tensor(uint64)": "TYPE_UINT64",
    "tensor(int8)": "TYPE_INT8",
    "tensor(int16)": "TYPE_INT16",
    "tensor(int32)": "TYPE_INT32",
    "tensor(int64)": "TYPE_INT64",
    "tensor(bool)": "TYPE_BOOL",
    "tensor(string)": "TYPE_STRING",
    "tensor(bfloat16)": "TYPE_BF16",
}
_NUMPY_TYPES = {
    "float32": "TYPE_FP32",
    "float16": "TYPE_FP16",
    "float64": "TYPE_FP64",
    "uint8": "TYPE_UINT8",
    "int8": "TYPE_INT8",
    "int16": "TYPE_INT16",
    "int32": "TYPE_INT32",
    "int64": "TYPE_INT64",
    "bool": "TYPE_BOOL",
}


class ModelFileError(ValueError):
    """A model file that cannot be served: the message names the file and the cause."""


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its name, Triton data type, and shape (None: a dynamic size)."""

    name: str
    data_type: str
    shape: tuple[int | None, ...]


@dataclass(frozen=True)
class ModelFile:
    path: Path
    kind: str  # "onnx" or "tflite"
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    # The exporter's metadata (ONNX metadata_props; values parsed as Python literals where they
    # are, as Ultralytics' guide writes them into config.pbtxt); {} when the file has none.
    metadata: dict[str, Any]

    @property
    def file_name(self) -> str:
        """The name Triton looks for in the version folder: model.onnx or model.tflite."""
        return f"model.{self.kind}"

    @property
    def batch_dynamic(self) -> bool:
        """Every input and output has a dynamic leading dimension: a batch axis (Triton's
        max_batch_size > 0, its dims then leave that axis out)."""
        tensors = (*self.inputs, *self.outputs)
        return bool(tensors) and all(len(t.shape) >= 1 and t.shape[0] is None for t in tensors)


def is_model_file_name(text: str) -> bool:
    """`--model` names a file rather than a model: it ends in .onnx or .tflite."""
    return text.lower().endswith(MODEL_FILE_SUFFIXES)


def model_name_of(path: str | Path) -> str:
    """The name the model gets on a server: the file's stem, in the characters Triton takes."""
    stem = Path(path).stem
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", stem).strip(".") or "model"
    return name


def read_model_file(path: str | Path) -> ModelFile:
    """The file's inputs, outputs and metadata; ModelFileError naming it and the cause."""
    p = Path(path)
    if not p.is_file():
        raise ModelFileError(f"model file {p}: no such file")
    if p.suffix.lower() == ".onnx":
        return _read_onnx(p)
    if p.suffix.lower() == ".tflite":
        return _read_tflite(p)
    raise ModelFileError(f"model file {p}: expected a .onnx or .tflite file")


def _read_onnx(p: Path) -> ModelFile:
    try:
        import onnxruntime  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # a dependency; only a broken install lacks it
        raise ModelFileError(f"model file {p}: onnxruntime is not installed, ONNX files cannot run") from None
    try:
        session = onnxruntime.InferenceSession(str(p), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types (Fail, InvalidGraph, NotImplemented...)
        raise ModelFileError(f"model file {p}: {_onnx_cause(str(exc))}") from None

    def spec(arg: Any) -> TensorSpec:
        data_type = _ONNX_TYPES.get(str(arg.type))
        if data_type is None:
            raise ModelFileError(f"model file {p}: {arg.name} has type {arg.type}, which Triton cannot carry")
        shape = tuple(d if isinstance(d, int) and d >= 0 else None for d in arg.shape)
        return TensorSpec(str(arg.name), data_type, shape)

    inputs = tuple(spec(a) for a in session.get_inputs())
    outputs = tuple(spec(a) for a in session.get_outputs())
    props = dict(session.get_modelmeta().custom_metadata_map)
    return ModelFile(p, "onnx", inputs, outputs, {k: _literal_or_text(v) for k, v in props.items()})


def _onnx_cause(text: str) -> str:
    """onnxruntime's message, shortened to its cause."""
    first = text.strip().splitlines()[0] if text.strip() else "onnxruntime cannot load it"
    if "Protobuf parsing failed" in first or "INVALID_PROTOBUF" in first:
        return "not an ONNX model, or truncated (onnxruntime cannot parse it)"
    if "NOT_IMPLEMENTED" in first or "Could not find an implementation" in first:
        return f"an operator onnxruntime does not implement: {first}"
    if "No opset import for domain" in first or "is not a registered function/op" in first:
        return f"an operator onnxruntime does not know: {first}"
    return f"onnxruntime cannot load it: {first}"


def _literal_or_text(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value


def _read_tflite(p: Path) -> ModelFile:
    try:
        from tflite_runtime.interpreter import Interpreter  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ModelFileError(
            f"model file {p}: tflite-runtime is not installed here (its wheels stop at Python 3.11)"
        ) from None
    try:
        interpreter = Interpreter(model_path=str(p), num_threads=1)
        interpreter.allocate_tensors()
    except Exception as exc:  # ValueError / RuntimeError with TFLite's own text
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFileError(
            f"model file {p}: not a TFLite model, truncated, or unsupported ({first})"
        ) from None

    def spec(detail: dict[str, Any]) -> TensorSpec:
        data_type = _NUMPY_TYPES.get(getattr(detail["dtype"], "__name__", str(detail["dtype"])))
        if data_type is None:
            raise ModelFileError(f"model file {p}: {detail['name']} has type {detail['dtype']}")
        return TensorSpec(str(detail["name"]), data_type, tuple(int(d) for d in detail["shape"]))

    inputs = tuple(spec(d) for d in interpreter.get_input_details())
    outputs = tuple(spec(d) for d in interpreter.get_output_details())
    return ModelFile(p, "tflite", inputs, outputs, {})
