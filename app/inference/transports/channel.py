"""One connection to a server (Triton, or any KServe v2 server), behind a small interface the
session is written against.

`GrpcChannel` (here, a tritonclient gRPC client) and `HttpChannel` (http_channel.py, the
asyncio HTTP client) are the real ones; `open_channel` (open_channel.py) picks one by the
endpoint's scheme. The session takes a `ChannelFactory`, so tests can drive rare orderings (a
reply before `send` returns, a timeout racing a reply) with a channel written for the test;
tritonclient itself is never mocked.

Only `ServerLive`, `ServerReady`, `ModelReady`, the metadata calls and inference are the
protocol's own; the repository index, the model config, statistics and shared memory are
Triton's extensions, which other servers may answer UNIMPLEMENTED (HTTP 404).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import tritonclient.grpc as grpcclient

from app.inference.errors import REPLY_OVERHEAD_BYTES
from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.redaction import remember_secrets

# Passing channel_args replaces ALL of tritonclient's defaults, including its 2 GiB message
# limits (gRPC's own default is 4 MiB): put them back whenever we pass any.
MAX_MESSAGE_BYTES = 2**31 - 1
# The most bytes of output one reply may carry (all its outputs, every image of a client
# batch): a bigger one fails as too large instead of the client holding and decoding hundreds
# of megabytes per image. Full-resolution semantic maps fit (19 classes x 1024 x 2048 FP32 is
# 160 MB). gRPC refuses a bigger message before allocating it (the receive limit below).
MAX_OUTPUT_BYTES = 256 * 2**20

# gRPC metadata: text, or bytes for a binary key (name ending in "-bin"; gRPC refuses a str there).
Headers = Mapping[str, str | bytes]
TraceSettingsJson = dict[str, list[str]]


def trace_settings_json(answer: Any) -> TraceSettingsJson:
    """Trace settings as either protocol answers them (gRPC's JSON: {"settings": {key:
    {"value": [...]}}}; HTTP: {key: value or [values]}), as {key: [values as text]}."""
    raw = answer.get("settings", answer) if isinstance(answer, dict) else {}
    settings: TraceSettingsJson = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            value = value.get("value", [])
        values = value if isinstance(value, list) else [value]
        settings[str(key)] = [str(v) for v in values]
    return settings


@dataclass(frozen=True)
class ConnectionOptions:
    ssl: bool = False
    root_certificates: str | None = None
    private_key: str | None = None
    certificate_chain: str | None = None
    headers: Headers = field(default_factory=dict)
    channels_per_server: int = 2
    keepalive_ms: int = 10_000
    # gRPC backs off reconnecting exponentially, up to 2 minutes by default: a server back
    # after an outage would stay "unreachable" for that long. At most 1 s here. (Not the
    # *min* back-off: gRPC also uses it as the connect timeout, 20 s by default.)
    max_reconnect_backoff_ms: int = 1_000
    max_output_bytes: int = MAX_OUTPUT_BYTES  # per reply (see MAX_OUTPUT_BYTES)

    def __post_init__(self) -> None:
        # Every header value in use is masked in whatever the process shows or writes from now on.
        remember_secrets(self.headers.values())

    def channel_args(self) -> list[tuple[str, Any]]:
        receive = min(MAX_MESSAGE_BYTES, self.max_output_bytes + REPLY_OVERHEAD_BYTES)
        return [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", receive),
            ("grpc.keepalive_time_ms", self.keepalive_ms),
            ("grpc.initial_reconnect_backoff_ms", min(100, self.max_reconnect_backoff_ms)),
            ("grpc.max_reconnect_backoff_ms", self.max_reconnect_backoff_ms),
            # Otherwise gRPC shares one subchannel (one TCP connection) between
            # channels with equal arguments, and "several channels" would be one.
            ("grpc.use_local_subchannel_pool", 1),
        ]


class Call(Protocol):
    """A request in flight."""

    def cancel(self) -> Any: ...


class Reply(Protocol):
    """A successful reply: the output tensors by name."""

    def as_numpy(self, name: str) -> Any: ...


# on_done(result=Reply | None, error=Exception | None), called exactly once, on any thread
# (gRPC's, or the sender's when the call ended before send() returned).
ReplyCallback = Callable[..., None]


class Channel(Protocol):
    """What the session needs from a connection. Errors are tritonclient's
    InferenceServerException (the failure classifier reads their status and text)."""

    endpoint: Endpoint  # the server it talks to (messages name `endpoint.url`)
    protocol: ServerProtocol
    in_flight: int  # requests this channel carries now (counted by the pool)

    def is_live(self, *, headers: Headers, timeout_s: float) -> bool: ...
    def is_model_ready(self, name: str, *, headers: Headers, timeout_s: float, version: str = "") -> bool: ...
    def server_metadata(self, *, headers: Headers, timeout_s: float) -> dict[str, Any]: ...
    def repository_index(self, *, headers: Headers, timeout_s: float) -> list[dict[str, Any]]: ...
    # version "": the server's choice (its version policy's latest); else that version.
    def model_metadata(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]: ...
    def model_config(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]: ...
    def send(
        self,
        *,
        model_name: str,
        inputs: list[Any],
        outputs: list[Any],
        request_id: str,
        client_timeout: float,
        headers: Headers | None,
        on_done: ReplyCallback,
        model_version: str = "",
    ) -> Call: ...
    def register_system_shm(self, name: str, key: str, byte_size: int, *, headers: Headers) -> None: ...
    def unregister_system_shm(self, name: str, *, headers: Headers) -> None: ...
    # The names of the system shared-memory regions registered on the server (every client's).
    def system_shm_names(self, *, headers: Headers, timeout_s: float) -> list[str]: ...
    def inference_statistics(
        self, model: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]: ...
    def load_model(
        self, name: str, *, headers: Headers, timeout_s: float, config: str | None = None
    ) -> None: ...
    def unload_model(self, name: str, *, headers: Headers, timeout_s: float) -> None: ...
    # Triton's trace extension: the settings of one model ("": the server's global ones), each
    # setting's value(s) as a list of text ({"trace_level": ["TIMESTAMPS"], "trace_rate": ["1"]}).
    def trace_settings(self, model: str, *, headers: Headers, timeout_s: float) -> TraceSettingsJson: ...
    # Changes the settings named (a value None: back to the global one); answers the new settings.
    def update_trace_settings(
        self, model: str, settings: dict[str, Any], *, headers: Headers, timeout_s: float
    ) -> TraceSettingsJson: ...
    def close(self) -> None: ...


ChannelFactory = Callable[[Endpoint, ConnectionOptions], Channel]


class GrpcChannel:
    """One tritonclient client (one gRPC channel)."""

    protocol = ServerProtocol.GRPC

    def __init__(self, endpoint: Endpoint, options: ConnectionOptions) -> None:
        self.endpoint = endpoint
        self.client = grpcclient.InferenceServerClient(
            endpoint.address,
            ssl=options.ssl,
            root_certificates=options.root_certificates,
            private_key=options.private_key,
            certificate_chain=options.certificate_chain,
            channel_args=options.channel_args(),
        )
        self.in_flight = 0
        # tritonclient keeps the call in an instance attribute before attaching the
        # callback, so one client must issue async_infer from one thread at a time.
        self._send_lock = threading.Lock()

    def is_live(self, *, headers: Headers, timeout_s: float) -> bool:
        return bool(self.client.is_server_live(headers=dict(headers), client_timeout=timeout_s))

    def is_model_ready(self, name: str, *, headers: Headers, timeout_s: float, version: str = "") -> bool:
        return bool(
            self.client.is_model_ready(name, version, headers=dict(headers), client_timeout=timeout_s)
        )

    def server_metadata(self, *, headers: Headers, timeout_s: float) -> dict[str, Any]:
        return dict(
            self.client.get_server_metadata(headers=dict(headers), as_json=True, client_timeout=timeout_s)
        )

    def repository_index(self, *, headers: Headers, timeout_s: float) -> list[dict[str, Any]]:
        index = self.client.get_model_repository_index(
            headers=dict(headers), as_json=True, client_timeout=timeout_s
        )
        return list(index.get("models", []))

    def model_metadata(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        return dict(
            self.client.get_model_metadata(
                name, version, headers=dict(headers), as_json=True, client_timeout=timeout_s
            )
        )

    def model_config(
        self, name: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        wrapped = self.client.get_model_config(
            name, version, headers=dict(headers), as_json=True, client_timeout=timeout_s
        )
        return dict(wrapped.get("config", wrapped))

    def send(
        self,
        *,
        model_name: str,
        inputs: list[Any],
        outputs: list[Any],
        request_id: str,
        client_timeout: float,
        headers: Headers | None,
        on_done: ReplyCallback,
        model_version: str = "",
    ) -> Call:
        with self._send_lock:
            return self.client.async_infer(
                model_name=model_name,
                model_version=model_version,
                inputs=inputs,
                outputs=outputs,
                request_id=request_id,
                client_timeout=client_timeout,
                headers=dict(headers) if headers else None,
                callback=on_done,
            )

    def register_system_shm(self, name: str, key: str, byte_size: int, *, headers: Headers) -> None:
        self.client.register_system_shared_memory(name, key, byte_size, headers=dict(headers))

    def unregister_system_shm(self, name: str, *, headers: Headers) -> None:
        # By name, never "all": that would free other clients' regions too.
        self.client.unregister_system_shared_memory(name, headers=dict(headers))

    def system_shm_names(self, *, headers: Headers, timeout_s: float) -> list[str]:
        status = self.client.get_system_shared_memory_status(
            headers=dict(headers), as_json=True, client_timeout=timeout_s
        )
        return sorted((status or {}).get("regions", {}))

    def inference_statistics(
        self, model: str, *, headers: Headers, timeout_s: float, version: str = ""
    ) -> dict[str, Any]:
        stats = self.client.get_inference_statistics(
            model, version, headers=dict(headers), as_json=True, client_timeout=timeout_s
        )
        return dict(stats)

    def load_model(self, name: str, *, headers: Headers, timeout_s: float, config: str | None = None) -> None:
        self.client.load_model(name, headers=dict(headers), config=config, client_timeout=timeout_s)

    def unload_model(self, name: str, *, headers: Headers, timeout_s: float) -> None:
        self.client.unload_model(name, headers=dict(headers), client_timeout=timeout_s)

    def trace_settings(self, model: str, *, headers: Headers, timeout_s: float) -> TraceSettingsJson:
        return trace_settings_json(
            self.client.get_trace_settings(
                model_name=model or None, headers=dict(headers), as_json=True, client_timeout=timeout_s
            )
        )

    def update_trace_settings(
        self, model: str, settings: dict[str, Any], *, headers: Headers, timeout_s: float
    ) -> TraceSettingsJson:
        return trace_settings_json(
            self.client.update_trace_settings(
                model_name=model or None,
                settings=settings,
                headers=dict(headers),
                as_json=True,
                client_timeout=timeout_s,
            )
        )

    def close(self) -> None:
        self.client.close()
