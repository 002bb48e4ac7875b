"""How a request's tensors travel: inside the message (gRPC or HTTP), or through shared memory.

The session is written against `Transport`; `GrpcTransport` puts the input in the message
(of either protocol: its `Wire` writes the tensors),
`ShmTransport` (shm_transport.py) writes it into a system shared-memory region registered
once with the server. A CUDA shared-memory transport would be a third implementation of
the same three calls (where a GPU and the server are on this machine).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from app.inference.transports.channel import Reply
from app.inference.transports.constant_inputs import ConstantInput
from app.inference.transports.wire import Wire


class TransportKind(enum.StrEnum):
    AUTO = "auto"  # shared memory when the server is on this machine and accepts it, else in the message
    GRPC = "grpc"  # tensors inside the messages (the name is historical: over HTTP too)
    SHM = "shm"


@dataclass(eq=False)
class Lease:
    """What one send (one gRPC call, one or more batched images) carries."""

    inputs: list[Any]
    outputs: list[Any]
    batch: int
    slot: Any = None  # the transport's own (a shared-memory slot)
    extra: dict[str, Any] = field(default_factory=dict)


def declared_outputs(reply: Reply) -> dict[str, tuple[str, tuple[int, ...]]] | None:
    """What a reply says it carries, name -> (Triton datatype, shape), before any tensor is
    read (tritonclient's gRPC and HTTP results both say it); None when the reply cannot say."""
    get_response = getattr(reply, "get_response", None)
    if get_response is None:
        return None
    response = get_response()
    entries = response.get("outputs", []) if isinstance(response, dict) else response.outputs
    declared = {}
    for entry in entries:
        if isinstance(entry, dict):  # HTTP's JSON header
            name, datatype, shape = entry.get("name"), entry.get("datatype"), entry.get("shape", [])
        else:  # gRPC's ModelInferResponse.InferOutputTensor
            name, datatype, shape = entry.name, entry.datatype, entry.shape
        declared[str(name)] = (str(datatype), tuple(int(d) for d in shape))
    return declared


class Transport(Protocol):
    kind: TransportKind
    description: str  # for the user: "gRPC" / "HTTP (binary tensors)" / "shared memory (…)"

    def prepare(self, tensor: np.ndarray, batch: int) -> Lease:
        """Inputs and requested outputs for `tensor` (its first axis is the batch when batched)."""
        ...

    def outputs_of(self, lease: Lease, reply: Reply) -> dict[str, np.ndarray]:
        """The output tensors by name, owned by the caller (safe after `release`); an output
        the reply does not carry is left out (never read from a buffer's earlier contents)."""
        ...

    def release(self, lease: Lease, reusable: bool) -> None:
        """The send ended. `reusable`: the server has answered, so it no longer reads or
        writes the lease's buffers (False after a cancel or a timeout)."""
        ...

    def server_restarted(self) -> None:
        """The server forgot what was registered with it: register it again."""
        ...

    def close(self) -> None: ...


class GrpcTransport:
    """The tensors inside the messages, gRPC or HTTP (works with any server, local or remote)."""

    kind = TransportKind.GRPC

    def __init__(
        self,
        input_name: str,
        input_dtype: str,
        output_names: Sequence[str],
        wire: Wire | None = None,
        constants: Sequence[ConstantInput] = (),
    ) -> None:
        self.input_name = input_name
        self.input_dtype = input_dtype
        self.output_names = list(output_names)
        self.wire = wire or Wire()
        self.constants = tuple(constants)
        self.description = self.wire.description
        # Built once: the same requested outputs serve every request.
        self._outputs = [self.wire.output(n) for n in self.output_names]

    def prepare(self, tensor: np.ndarray, batch: int) -> Lease:
        image = self.wire.input(self.input_name, tensor, self.input_dtype)
        return Lease([image, *self.constant_inputs(batch)], self._outputs, batch)

    def constant_inputs(self, batch: int) -> list[Any]:
        """The inputs beside the image (a size input), inside the message."""
        return [self.wire.input(c.name, c.tensor(batch), c.datatype) for c in self.constants]

    def outputs_of(self, lease: Lease, reply: Reply) -> dict[str, np.ndarray]:
        arrays = {name: reply.as_numpy(name) for name in self.output_names}
        return {name: a for name, a in arrays.items() if a is not None}

    def release(self, lease: Lease, reusable: bool) -> None:
        lease.inputs = []  # free the tensor now

    def server_restarted(self) -> None:
        pass

    def close(self) -> None:
        pass
