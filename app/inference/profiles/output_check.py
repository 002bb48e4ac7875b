"""One check of every reply, whatever the transport: each output the profile reads is there,
with the datatype and shape the model declares, and not larger than the limit.

The session runs it on what the reply says it carries (before any tensor is copied out of
a message or a shared-memory region) and again on the arrays it read, before decoding, so
an output left out, of another type or shape, or too big is a failed request naming the
output: never decoded from stale or misread bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tritonclient.utils import np_to_triton_dtype, triton_to_np_dtype

from app.inference.profiles.profile_types import ModelProfile
from app.inference.result import ErrorKind

# name -> (Triton datatype, shape): what a reply declares, or what an array is.
TensorDescs = Mapping[str, tuple[str, tuple[int, ...]]]


class OutputError(ValueError):
    """A reply the profile cannot be decoded from; `kind` is TOO_LARGE or SERVER;
    `incomplete`: outputs the profile needs are not in it at all."""

    def __init__(self, message: str, kind: ErrorKind = ErrorKind.SERVER, *, incomplete: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.incomplete = incomplete


@dataclass(frozen=True)
class ExpectedOutput:
    name: str
    datatype: str | None  # Triton's ("FP32"); None: the model does not say
    shape: tuple[int, ...] | None  # -1 where dynamic; None: the model does not say


def describe_arrays(arrays: Mapping[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The descriptions of arrays read from a reply (None values: not there)."""
    found = {}
    for name, value in arrays.items():
        if value is None:
            continue
        a = np.asarray(value)
        datatype = "BYTES" if a.dtype == np.object_ else np_to_triton_dtype(a.dtype)
        found[name] = (str(datatype), tuple(int(d) for d in a.shape))
    return found


def _nbytes(datatype: str, shape: tuple[int, ...]) -> int | None:
    if datatype == "BYTES" or any(d < 0 for d in shape):
        return None
    try:
        itemsize = np.dtype(triton_to_np_dtype(datatype)).itemsize
    except TypeError:  # a datatype numpy has no type for
        return None
    return itemsize * math.prod(shape)


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 10**9 else f"{n / 1e9:.2f} GB"


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


class OutputCheck:
    """What one model's replies must carry (built once per session)."""

    def __init__(self, expected: Sequence[ExpectedOutput], batched: bool, max_bytes: int) -> None:
        self.expected = list(expected)
        self.batched = batched  # Triton batches the model: the first axis is the request's batch
        self.max_bytes = max_bytes

    @classmethod
    def of(
        cls, profile: ModelProfile, declared: Sequence[Mapping[str, Any]], max_batch_size: int, max_bytes: int
    ) -> OutputCheck:
        """From the profile's outputs and the model's metadata (`declared`: its outputs, each
        {"name", "datatype", "shape"}; the shape has the batch axis as -1 when Triton batches)."""
        by_name = {str(o.get("name")): o for o in declared}
        expected = []
        for name in profile.output_names:
            meta = by_name.get(name)
            if meta is None:
                expected.append(ExpectedOutput(name, None, None))
                continue
            raw_shape = meta.get("shape")
            shape = None if raw_shape is None else tuple(int(d) for d in raw_shape)
            datatype = meta.get("datatype")
            expected.append(ExpectedOutput(name, str(datatype) if datatype else None, shape))
        return cls(expected, max_batch_size > 0, max_bytes)

    def check(self, found: TensorDescs, batch: int) -> None:
        """Raise OutputError naming the first output that is missing, of another datatype or
        shape than declared, or the reply's size when over the limit."""
        missing = [e.name for e in self.expected if e.name not in found]
        if missing:
            there = ", ".join(sorted(found)) or "none"
            raise OutputError(
                f"the model's reply has no output {', '.join(repr(m) for m in missing)} "
                f"(outputs in the reply: {there})",
                incomplete=True,
            )
        for e in self.expected:
            datatype, shape = found[e.name]
            if e.datatype is not None and datatype != e.datatype:
                raise OutputError(f"output '{e.name}' is {datatype}; the model declares {e.datatype}")
            if e.shape is not None and not self._shape_fits(e.shape, shape, batch):
                wanted = list(e.shape)
                if self.batched and wanted:
                    wanted[0] = batch
                raise OutputError(
                    f"output '{e.name}' has shape {_shape_text(shape)}; "
                    f"the model declares {_shape_text(wanted)}"
                )
        sizes = {name: _nbytes(*desc) for name, desc in found.items()}
        total = sum(n for n in sizes.values() if n is not None)
        if total > self.max_bytes:
            biggest = max(sizes, key=lambda n: sizes[n] or 0)
            raise OutputError(
                f"the model's output is too large: {_megabytes(total)} ('{biggest}' "
                f"{_shape_text(found[biggest][1])}); at most {_megabytes(self.max_bytes)} per reply",
                ErrorKind.TOO_LARGE,
            )

    def _shape_fits(self, declared: tuple[int, ...], shape: tuple[int, ...], batch: int) -> bool:
        if len(declared) != len(shape):
            return False
        for i, (want, got) in enumerate(zip(declared, shape, strict=True)):
            if i == 0 and self.batched:
                if got != batch:
                    return False
            elif want >= 0 and got != want:
                return False
        return True
