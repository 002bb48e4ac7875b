"""ShmTransport: inputs (and fixed-size outputs) through Triton system shared memory.

Regions are registered once and reused from a pool that grows to the number of sends in
flight (the window): registering per request would cost more than it saves. A slot whose
send was cancelled or timed out is never reused (the server may still read its input or
write its outputs): it is retired and unregistered at close. Everything is unregistered
and unlinked by `close()`.

Stale outputs: an output region holds the previous request's answer until the server writes
the next one. An output is read only when the reply says the server wrote it (with the
datatype and shape it was given room for), and the bytes a send used are cleared when its
slot is given back, so a reply without an output can never be decoded from the last one's.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from tritonclient.utils import triton_to_np_dtype

from app.inference.protocol import ServerProtocol
from app.inference.transports.channel import MAX_OUTPUT_BYTES, Reply
from app.inference.transports.constant_inputs import ConstantInput
from app.inference.transports.shm import ShmRegion
from app.inference.transports.transport import GrpcTransport, Lease, TransportKind, declared_outputs
from app.inference.transports.wire import Wire

log = logging.getLogger(__name__)

MIN_REGION_BYTES = 1 << 20  # regions grow in steps of at least 1 MiB, not frame by frame

Register = Callable[[ShmRegion], None]  # registers a region with every server (raises on failure)
Unregister = Callable[[ShmRegion], None]


@dataclass(frozen=True)
class OutputSpec:
    name: str
    datatype: str  # Triton's, e.g. "FP32"
    item_shape: tuple[int, ...]  # without the batch axis; -1 where dynamic
    # False: the output has no batch axis (a model without batching whose output is, e.g.,
    # [3200, 1] for an input [1, 3, 320, 320]): `item_shape` is its whole shape, one per send.
    batched: bool = True

    @property
    def fixed(self) -> bool:
        return all(d >= 0 for d in self.item_shape)

    def item_bytes(self) -> int:
        return int(np.dtype(triton_to_np_dtype(self.datatype)).itemsize * math.prod(self.item_shape))

    def shape(self, batch: int) -> tuple[int, ...]:
        """The shape the server writes for a send of `batch` images."""
        return (batch, *self.item_shape) if self.batched else self.item_shape

    def byte_size(self, batch: int) -> int:
        return self.item_bytes() * (batch if self.batched else 1)


def _input_size(nbytes: int) -> int:
    """Room for this tensor and somewhat bigger ones, in whole MiB: a slot is not regrown
    for every slightly larger image."""
    wanted = max(MIN_REGION_BYTES, nbytes * 5 // 4)
    return -(-wanted // MIN_REGION_BYTES) * MIN_REGION_BYTES


class _Slot:
    def __init__(self, input_region: ShmRegion, output_region: ShmRegion | None) -> None:
        self.input = input_region
        self.output = output_region

    def regions(self) -> list[ShmRegion]:
        return [self.input] + ([self.output] if self.output is not None else [])


class ShmTransport:
    kind = TransportKind.SHM

    def __init__(
        self,
        input_name: str,
        input_dtype: str,
        outputs: Sequence[OutputSpec],
        max_batch: int,
        register: Register,
        unregister: Unregister,
        wire: Wire | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        constants: Sequence[ConstantInput] = (),
    ) -> None:
        self.input_name = input_name
        self.input_dtype = input_dtype
        self.outputs = list(outputs)
        self.max_batch = max(1, max_batch)
        self._register = register
        self._unregister = unregister
        # Outputs whose size is not known in advance come back in the reply instead, and so do
        # outputs over the size limit (gRPC refuses such a reply before allocating it).
        self.outputs_in_shm = (
            bool(self.outputs)
            and all(o.fixed for o in self.outputs)
            and self._output_bytes(self.max_batch) <= max_output_bytes
        )
        self.wire = wire or Wire()
        # In the message (of the same protocol): outputs of unknown size, a region that cannot be had.
        # The inputs beside the image (a size input) go there too: a few bytes each.
        self._grpc_outputs = GrpcTransport(
            input_name, input_dtype, [o.name for o in self.outputs], self.wire, constants
        )
        self._lock = threading.Lock()
        self._free: list[_Slot] = []
        self._retired: list[_Slot] = []
        self._all: list[_Slot] = []
        self._closed = False
        where = "inputs and outputs" if self.outputs_in_shm else "inputs"
        over = "" if self.wire.protocol is ServerProtocol.GRPC else f" over {self.wire.protocol.label}"
        self.description = f"shared memory ({where}){over}"

    # -- the pool ---------------------------------------------------------------------------
    def _output_bytes(self, batch: int) -> int:
        return sum(o.byte_size(batch) for o in self.outputs)

    def _new_region(self, byte_size: int) -> ShmRegion:
        region = ShmRegion(byte_size)
        try:
            self._register(region)
        except BaseException:
            region.close()
            raise
        return region

    def _drop_region(self, region: ShmRegion) -> None:
        with contextlib.suppress(Exception):
            self._unregister(region)
        region.close()

    def _take_slot(self, input_bytes: int) -> _Slot:
        with self._lock:
            if self._closed:
                raise RuntimeError("the transport is closed")
            fitting = [s for s in self._free if s.input.byte_size >= input_bytes]
            slot = fitting[0] if fitting else (self._free[0] if self._free else None)
            if slot is not None:
                self._free.remove(slot)
        if slot is None:
            self._reclaim()
            output = self._new_region(self._output_bytes(self.max_batch)) if self.outputs_in_shm else None
            try:
                slot = _Slot(self._new_region(_input_size(input_bytes)), output)
            except BaseException:
                if output is not None:
                    self._drop_region(output)
                raise
            with self._lock:
                self._all.append(slot)
        elif slot.input.byte_size < input_bytes:  # a bigger image than before: grow this slot
            old, slot.input = slot.input, self._new_region(_input_size(input_bytes))
            self._drop_region(old)
        return slot

    def _reclaim(self) -> None:
        """Free the retired slots the server has let go of: unregistering a region a request
        still uses is refused, so a refused slot stays retired and is tried again later."""
        with self._lock:
            retired, self._retired = self._retired, []
        kept = []
        for slot in retired:
            try:
                for region in slot.regions():
                    self._unregister(region)
            except Exception:
                kept.append(slot)
                continue
            for region in slot.regions():
                region.close()
            with self._lock:
                if slot in self._all:
                    self._all.remove(slot)
        with self._lock:
            self._retired.extend(kept)

    def warm(self) -> None:
        """Make (and register) one slot now: raises when the server cannot use our regions."""
        slot = self._take_slot(1)
        with self._lock:
            self._free.append(slot)

    # -- Transport ----------------------------------------------------------------------------
    def prepare(self, tensor: np.ndarray, batch: int) -> Lease:
        try:
            slot = self._take_slot(tensor.nbytes)
        except Exception as e:  # e.g. /dev/shm full: this one goes inside the message
            log.warning(
                "no shared-memory region for %d bytes (%s): sending it in the message", tensor.nbytes, e
            )
            return self._grpc_outputs.prepare(tensor, batch)
        slot.input.write(tensor)
        inp = self.wire.shm_input(
            self.input_name, list(tensor.shape), self.input_dtype, slot.input.name, tensor.nbytes
        )
        if self.outputs_in_shm:
            assert slot.output is not None
            outputs, offset = [], 0
            for spec in self.outputs:
                size = spec.byte_size(batch)
                outputs.append(self.wire.shm_output(spec.name, slot.output.name, size, offset))
                offset += size
        else:
            outputs = self._grpc_outputs.prepare(tensor[:0], batch).outputs
        return Lease([inp, *self._grpc_outputs.constant_inputs(batch)], outputs, batch, slot)

    def outputs_of(self, lease: Lease, reply: Reply) -> dict[str, np.ndarray]:
        if not self.outputs_in_shm or lease.slot is None:
            return self._grpc_outputs.outputs_of(lease, reply)
        slot: _Slot = lease.slot
        assert slot.output is not None
        # Only what the server says it wrote: the rest of the region is not this reply's.
        declared = declared_outputs(reply)
        out, offset = {}, 0
        for spec in self.outputs:
            dtype = np.dtype(triton_to_np_dtype(spec.datatype))
            shape = spec.shape(lease.batch)
            size = spec.byte_size(lease.batch)
            written = None if declared is None else declared.get(spec.name)
            if declared is None or written == (spec.datatype, shape):
                out[spec.name] = slot.output.read(dtype, shape, offset)
            elif written is not None:
                raise ValueError(
                    f"output '{spec.name}' came back as {written[0]} {list(written[1])}; "
                    f"room was made for {spec.datatype} {list(shape)}"
                )
            offset += size
        return out

    def release(self, lease: Lease, reusable: bool) -> None:
        slot: _Slot | None = lease.slot
        lease.slot, lease.inputs = None, []
        if slot is None:
            return
        if reusable and self.outputs_in_shm and slot.output is not None:
            # The server has answered (it writes no more): clear what this send's outputs
            # used, so the next reply that leaves one out finds zeros, not this answer.
            slot.output.clear(self._output_bytes(lease.batch))
        with self._lock:
            if self._closed:
                return
            (self._free if reusable else self._retired).append(slot)
            reclaim = not reusable
        if reclaim:
            self._reclaim()

    def server_restarted(self) -> None:
        """Register every region again (a restarted server knows none of them)."""
        with self._lock:
            regions = [r for slot in self._all for r in slot.regions()]
        for region in regions:
            with contextlib.suppress(Exception):  # already known to this server: fine
                self._register(region)

    def close(self) -> None:
        """Unregister and unlink every region (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            slots, self._all, self._free, self._retired = self._all, [], [], []
        for slot in slots:
            for region in slot.regions():
                self._drop_region(region)
