"""Inputs a model needs beside the image whose value is the same for every request of a
session: the official RT-DETR / D-FINE / DEIM exports' `orig_target_sizes` (each image's
(width, height), which the app fills with the model-input size). They always go inside the
message, whatever carries the image: a few bytes, not worth a shared-memory region."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_NUMPY = {"INT64": np.int64, "INT32": np.int32, "FP32": np.float32}


@dataclass(frozen=True)
class ConstantInput:
    name: str
    datatype: str  # Triton's: INT64, INT32 or FP32
    values: tuple[float, ...]  # one image's
    batched: bool  # the input has a batch axis ([N, ...]) like the image's

    def tensor(self, batch: int) -> np.ndarray:
        row = np.asarray(self.values, _NUMPY[self.datatype])
        return np.tile(row, (batch, 1)) if self.batched else row


def size_inputs(
    name: str | None, datatype: str, input_size: tuple[int, int] | None, batched: bool
) -> Sequence[ConstantInput]:
    """The size input of a profile (`size_input`), filled with the model-input (width, height)."""
    if name is None or input_size is None:
        return ()
    height, width = input_size
    return (ConstantInput(name, datatype, (width, height), batched),)
