"""Which transport a session uses: shared memory when the server is on this machine and
accepts a region, the tensors inside the messages (gRPC or HTTP) otherwise (or when asked),
with a sentence saying why."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping

from app.inference.errors import (
    CLIENT_SHM_NOTE,
    classify_failure,
    client_shm_disabled,
    error_text,
    extension_missing,
    restricted_header,
    restricted_message,
)
from app.inference.introspection.discovery import ModelInfo
from app.inference.introspection.extensions import MISSING, Extension, ServerFeatures
from app.inference.protocol import Endpoint
from app.inference.transports.channel import MAX_OUTPUT_BYTES, Channel, Headers
from app.inference.transports.constant_inputs import size_inputs
from app.inference.transports.shm import (
    ShmRegion,
    remove_dead_owners_regions,
    unregister_dead_owners_regions,
)
from app.inference.transports.shm_transport import OutputSpec, ShmTransport
from app.inference.transports.transport import GrpcTransport, Transport, TransportKind
from app.inference.transports.wire import Wire

log = logging.getLogger(__name__)


def is_loopback(endpoint: Endpoint) -> bool:
    """The server is on this machine (a gRPC target naming several servers is not)."""
    host = endpoint.host
    if host is None:
        return False
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def output_specs(info: ModelInfo) -> list[OutputSpec]:
    """The profile's outputs as sized specs (item shape without the batch axis). A model
    that batches has the axis on every output; one that does not (max_batch_size 0) only
    where the output leads with the input's 1 (or -1): insightface's SCRFD files take
    [1, 3, H, W] and give [cells, 1], [cells, 4]... with no batch axis."""
    by_name = {o.get("name"): o for o in info.outputs}
    specs = []
    for name in info.profile.output_names:
        meta = by_name.get(name) or {}
        shape = tuple(int(d) for d in meta.get("shape", []) or [])
        datatype = str(meta.get("datatype", "FP32"))
        if not (info.profile.has_batch_dim and shape):
            specs.append(OutputSpec(name, datatype, (-1,)))  # unknown: not in shared memory
        elif info.max_batch_size > 0 or shape[0] in (1, -1):
            specs.append(OutputSpec(name, datatype, shape[1:]))
        else:
            specs.append(OutputSpec(name, datatype, shape, batched=False))
    return specs


def choose_transport(
    kind: TransportKind,
    channels: Mapping[Endpoint, Channel],
    info: ModelInfo,
    headers: Headers,
    max_batch: int,
    wire: Wire | None = None,
    features: ServerFeatures | None = None,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
) -> tuple[Transport, str]:
    """(the transport, a note for the user when the choice differs from what was asked).
    `wire`: how tensors go inside the messages (gRPC, or HTTP binary or JSON); `features`:
    what the server has of Triton's extensions (shared memory is one of them)."""
    profile = info.profile
    wire = wire or Wire()
    constants = size_inputs(
        profile.size_input, profile.size_input_dtype, profile.input_size, profile.has_batch_dim
    )
    grpc = GrpcTransport(profile.input_name, profile.input_dtype, profile.output_names, wire, constants)
    remote = [endpoint for endpoint in channels if not is_loopback(endpoint)]
    if not remote and (features is None or not features.lacks(Extension.SHARED_MEMORY)):
        # Regions left by a client that was killed: its files here, its registrations there
        # (whatever this session uses: they hold the server's memory).
        remove_dead_owners_regions()
        unregister_dead_owners_regions(channels.values(), headers)
    if kind is TransportKind.GRPC:
        return grpc, ""
    if remote:
        where = (
            f"one server on this machine ({remote[0].url} balances over several)"
            if remote[0].balanced
            else f"the server on this machine ({remote[0].url} is not)"
        )
        note = f"shared memory needs {where}; using {wire.description}" if kind is TransportKind.SHM else ""
        return grpc, note
    if features is not None and features.lacks(Extension.SHARED_MEMORY):
        return grpc, MISSING[Extension.SHARED_MEMORY]

    def register(region: ShmRegion) -> None:
        for channel in channels.values():
            channel.register_system_shm(region.name, region.key, region.byte_size, headers=headers)

    def unregister(region: ShmRegion) -> None:
        for channel in channels.values():
            try:
                channel.unregister_system_shm(region.name, headers=headers)
            except Exception as e:
                if not classify_failure(e, channel.endpoint).name_unknown:
                    raise  # e.g. still in use: the caller tries again later

    shm = ShmTransport(
        profile.input_name,
        profile.input_dtype,
        output_specs(info),
        max_batch,
        register,
        unregister,
        wire,
        max_output_bytes,
        constants,
    )
    try:
        shm.warm()  # a probe: the server must map a region of ours
    except Exception as e:
        shm.close()
        # Triton 2.69+ refuses client shared memory unless told to (UNIMPLEMENTED / 501, like
        # a missing extension, so looked at first), or guards it by a restricted protocol.
        if client_shm_disabled(e):
            return grpc, f"{', '.join(endpoint.url for endpoint in channels)}: {CLIENT_SHM_NOTE}"
        key = restricted_header(e)
        if key is not None:
            refusal = restricted_message(next(iter(channels)), key)
            return grpc, f"shared memory not used: {refusal}; tensors go inside the messages"
        if extension_missing(e):  # decided by the status code (UNIMPLEMENTED, HTTP 404...)
            if features is not None:
                features.mark_missing(Extension.SHARED_MEMORY)
            return grpc, MISSING[Extension.SHARED_MEMORY]
        reason = error_text(e) if isinstance(e, Exception) else str(e)
        servers = ", ".join(endpoint.url for endpoint in channels)
        note = f"shared memory not usable with {servers} ({reason}); using {wire.description}"
        log.warning(note)
        return grpc, note
    return shm, ""
