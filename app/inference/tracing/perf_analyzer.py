"""The exact tensors of selected requests as perf_analyzer `--input-data` JSON, and the
perf_analyzer command line that replays them elsewhere.

perf_analyzer's "real input data" file: `{"data": [{"INPUT": {"content": {"b64": ...},
"shape": [...]}}, ...]}`, one entry per batch element, used round-robin; with `-b N` it
takes N consecutive entries per request. The shape is given per entry (the app's inputs are
often of variable size: `[-1, -1, 3]`), without the batch axis when the model batches
(`max_batch_size` > 0), whole otherwise. Contents are base64 of the row-major bytes,
little-endian (exact for every type, FP16 included, and a third of the size of JSON
numbers); BYTES tensors as Triton serialises them (a 4-byte length before each element).
`read_input_data` parses a file back into arrays: the round trip the tests check.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tritonclient.utils import (
    deserialize_bytes_tensor,
    np_to_triton_dtype,
    serialize_byte_tensor,
    triton_to_np_dtype,
)

from app.system.atomic_files import write_whole


class InputDataError(ValueError):
    """The tensors cannot be written as one perf_analyzer data file (the message says why)."""


def _encode(array: np.ndarray, datatype: str) -> dict[str, Any]:
    if datatype == "BYTES":
        serialised = serialize_byte_tensor(np.asarray(array, dtype=np.object_))
        raw = bytes(serialised.item()) if serialised.size else b""
    else:
        raw = np.ascontiguousarray(
            array, dtype=np.dtype(triton_to_np_dtype(datatype)).newbyteorder("<")
        ).tobytes()
    return {"content": {"b64": base64.b64encode(raw).decode("ascii")}, "shape": [int(d) for d in array.shape]}


def datatypes_of(tensors: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Each tensor's Triton datatype, from its numpy type (object arrays: BYTES)."""
    return {name: str(np_to_triton_dtype(np.asarray(array).dtype)) for name, array in tensors.items()}


def input_data(
    requests: Sequence[Mapping[str, np.ndarray]], datatypes: Mapping[str, str] | None = None, *, batched: bool
) -> dict[str, Any]:
    """The data file of `requests` (each: input name -> the tensor sent, with its batch axis
    when `batched`). Every request must carry the inputs of `datatypes` (name -> Triton
    datatype; None: the first request's, from its arrays)."""
    if datatypes is None:
        datatypes = datatypes_of(requests[0]) if requests else {}
    entries: list[dict[str, Any]] = []
    for number, tensors in enumerate(requests, 1):
        missing = sorted(set(datatypes) - set(tensors))
        if missing:
            raise InputDataError(f"request {number} has no tensor for input {', '.join(missing)}")
        sizes = {len(tensors[name]) for name in datatypes} if batched else {1}
        if len(sizes) != 1:
            raise InputDataError(f"request {number}: its inputs have different batch sizes {sorted(sizes)}")
        for element in range(sizes.pop()):
            entries.append(
                {
                    name: _encode(tensors[name][element] if batched else tensors[name], datatype)
                    for name, datatype in datatypes.items()
                }
            )
    return {"data": entries}


def write_input_data(
    path: str | Path,
    requests: Sequence[Mapping[str, np.ndarray]],
    datatypes: Mapping[str, str] | None = None,
    *,
    batched: bool,
) -> int:
    """Written whole or not at all; the number of entries."""
    document = input_data(requests, datatypes, batched=batched)
    write_whole(path, json.dumps(document, separators=(",", ":")) + "\n")
    return len(document["data"])


def read_input_data(document: Mapping[str, Any], datatypes: Mapping[str, str]) -> list[dict[str, np.ndarray]]:
    """A data file's entries as arrays (name -> array of the entry's shape)."""
    out = []
    for entry in document["data"]:
        arrays = {}
        for name, datatype in datatypes.items():
            tensor = entry[name]
            raw = base64.b64decode(tensor["content"]["b64"])
            shape = tuple(int(d) for d in tensor["shape"])
            if datatype == "BYTES":
                arrays[name] = deserialize_bytes_tensor(raw).reshape(shape)
            else:
                dtype = np.dtype(triton_to_np_dtype(datatype)).newbyteorder("<")
                arrays[name] = np.frombuffer(raw, dtype=dtype).reshape(shape)
        out.append(arrays)
    return out


def replay_command(
    *,
    model: str,
    url: str,
    protocol: str,
    input_file: str | Path,
    batch: int,
    concurrency: int,
    version: str = "",
    shared_memory: bool = False,
) -> str:
    """The perf_analyzer command line that sends the file's tensors as the app sent them:
    the same model (and version), protocol, client batch and requests in flight."""
    args = ["perf_analyzer", "-m", model]
    if version:
        args += ["-x", version]
    args += ["-u", url, "-i", protocol.lower(), "--input-data", str(input_file)]
    args += ["-b", str(max(1, batch)), "--concurrency-range", str(max(1, concurrency))]
    if shared_memory:
        args += ["--shared-memory", "system"]
    return shlex.join(args)
