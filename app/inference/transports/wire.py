"""`Wire`: how a request's tensors are written, by protocol. tritonclient has one set of
InferInput / InferRequestedOutput classes per protocol; over HTTP a tensor travels as raw
bytes after the JSON header (Triton's binary tensor extension) or, for servers without that
extension (MLServer), as a JSON list of numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

from app.inference.protocol import ServerProtocol


def _http() -> Any:
    """tritonclient.http, imported on first use (it brings gevent: gRPC users never pay)."""
    import tritonclient.http

    return tritonclient.http


@dataclass(frozen=True)
class Wire:
    protocol: ServerProtocol = ServerProtocol.GRPC
    binary: bool = True  # HTTP only: the binary tensor extension (else JSON numbers)

    @property
    def description(self) -> str:
        """For the user: "gRPC", "HTTP (binary tensors)", "HTTP (JSON tensors)"."""
        if self.protocol is ServerProtocol.GRPC:
            return "gRPC"
        return f"HTTP ({'binary' if self.binary else 'JSON'} tensors)"

    def input(self, name: str, tensor: np.ndarray, datatype: str) -> Any:
        """An input carrying `tensor` inside the message."""
        if self.protocol is ServerProtocol.GRPC:
            inp = grpcclient.InferInput(name, list(tensor.shape), datatype)
            inp.set_data_from_numpy(tensor)
            return inp
        inp = _http().InferInput(name, list(tensor.shape), datatype)
        inp.set_data_from_numpy(tensor, binary_data=self.binary)
        return inp

    def shm_input(self, name: str, shape: list[int], datatype: str, region: str, byte_size: int) -> Any:
        """An input read by the server from a registered shared-memory region."""
        module = grpcclient if self.protocol is ServerProtocol.GRPC else _http()
        inp = module.InferInput(name, shape, datatype)
        inp.set_shared_memory(region, byte_size)
        return inp

    def output(self, name: str) -> Any:
        if self.protocol is ServerProtocol.GRPC:
            return grpcclient.InferRequestedOutput(name)
        return _http().InferRequestedOutput(name, binary_data=self.binary)

    def shm_output(self, name: str, region: str, byte_size: int, offset: int) -> Any:
        requested = self.output(name)
        requested.set_shared_memory(region, byte_size, offset)
        return requested
