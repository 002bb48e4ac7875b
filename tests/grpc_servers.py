"""Small real gRPC servers (grpcio) for what the Triton test server cannot show: a TLS port,
and what metadata a client really sends. Neither implements Triton's API: every call is
answered UNIMPLEMENTED after it has been recorded."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc


@dataclass
class RecordingServer:
    url: str
    calls: list[tuple[str, dict[str, str | bytes]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def metadata(self) -> list[dict[str, str | bytes]]:
        with self.lock:
            return [m for _method, m in self.calls]


class _Recorder(grpc.GenericRpcHandler):
    def __init__(self, server: RecordingServer) -> None:
        self.server = server

    def service(self, details: Any) -> grpc.RpcMethodHandler:
        metadata = {k: v for k, v in details.invocation_metadata}
        with self.server.lock:
            self.server.calls.append((details.method, metadata))

        def unimplemented(_request: bytes, context: grpc.ServicerContext) -> bytes:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "recording server: not Triton")
            return b""

        return grpc.unary_unary_rpc_method_handler(unimplemented)


@contextlib.contextmanager
def recording_server() -> Iterator[RecordingServer]:
    """A plain gRPC server on 127.0.0.1 that records every call's method and metadata."""
    server = grpc.server(futures.ThreadPoolExecutor(2))
    port = server.add_insecure_port("127.0.0.1:0")
    record = RecordingServer(f"127.0.0.1:{port}")
    server.add_generic_rpc_handlers((_Recorder(record),))
    server.start()
    try:
        yield record
    finally:
        server.stop(0).wait()


def self_signed_certificate(folder: Path, host: str | None = None) -> tuple[Path, Path]:
    """(key.pem, cert.pem) for 127.0.0.1 (or for the DNS name `host`), made by the openssl command."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    name, alt = (host, f"DNS:{host}") if host else ("127.0.0.1", "IP:127.0.0.1")
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name}",
            "-addext", f"subjectAltName={alt}",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return key, cert


@contextlib.contextmanager
def tls_server(folder: Path, host: str | None = None) -> Iterator[tuple[str, Path]]:
    """A TLS gRPC server on 127.0.0.1: (url, its certificate as a CA bundle). `host`: the
    certificate names that host instead of 127.0.0.1."""
    key, cert = self_signed_certificate(folder, host)
    server = grpc.server(futures.ThreadPoolExecutor(2))
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield f"127.0.0.1:{port}", cert
    finally:
        server.stop(0).wait()


# Triton's gRPC methods by the category its restricted protocols name them with
# (--grpc-restricted-protocol=<categories>:<key>=<value>; server src/restricted_features.h).
TRITON_CATEGORIES = {
    "ServerLive": "health", "ServerReady": "health", "ModelReady": "health",
    "ServerMetadata": "metadata", "ModelMetadata": "metadata",
    "ModelInfer": "inference", "ModelStreamInfer": "inference",
    "ModelConfig": "model-config", "ModelStatistics": "statistics", "TraceSetting": "trace",
    "RepositoryIndex": "model-repository", "RepositoryModelLoad": "model-repository",
    "RepositoryModelUnload": "model-repository", "LogSettings": "logging",
    "SystemSharedMemoryStatus": "shared-memory", "SystemSharedMemoryRegister": "shared-memory",
    "SystemSharedMemoryUnregister": "shared-memory", "CudaSharedMemoryStatus": "shared-memory",
    "CudaSharedMemoryRegister": "shared-memory", "CudaSharedMemoryUnregister": "shared-memory",
}  # fmt: skip
# What Triton 2.69+ answers a client shared-memory (un)registration when started without
# --allow-client-shm=true (gRPC UNIMPLEMENTED; server src/common.h, src/grpc/grpc_server.cc).
CLIENT_SHM_DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)
SHM_REFUSED = {
    "SystemSharedMemoryRegister", "SystemSharedMemoryUnregister",
    "CudaSharedMemoryRegister", "CudaSharedMemoryUnregister",
}  # fmt: skip


@dataclass
class TritonLikeRules:
    """How the proxy answers like a current Triton: `allow_client_shm` False as a 2.69+ server
    without --allow-client-shm=true; `restricted`: category -> (header, value) as
    --grpc-restricted-protocol=<category>:<header>=<value>."""

    allow_client_shm: bool = True
    restricted: dict[str, tuple[str, str]] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, str | bytes]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def methods_with(self, key: str) -> set[str]:
        """The methods called with header `key` (whatever its value)."""
        with self.lock:
            return {method for method, metadata in self.calls if key in metadata}

    def methods(self) -> set[str]:
        with self.lock:
            return {method for method, _ in self.calls}


class _TritonLike(grpc.GenericRpcHandler):
    """Every call forwarded, as bytes, to the real Triton behind, unless a rule refuses it."""

    def __init__(self, upstream: grpc.Channel, rules: TritonLikeRules) -> None:
        self.upstream, self.rules = upstream, rules

    def service(self, details: Any) -> grpc.RpcMethodHandler | None:
        method = details.method.rsplit("/", 1)[-1]
        if method == "ModelStreamInfer":
            return None  # not used by the app
        metadata = {k: v for k, v in details.invocation_metadata}
        with self.rules.lock:
            self.rules.calls.append((method, metadata))
        forward = self.upstream.unary_unary(details.method)
        rules = self.rules

        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            restriction = rules.restricted.get(TRITON_CATEGORIES.get(method, ""))
            if restriction is not None and metadata.get(restriction[0]) != restriction[1]:
                context.abort(
                    grpc.StatusCode.UNAVAILABLE,
                    f"This protocol is restricted, expecting header '{restriction[0]}'",
                )
            if not rules.allow_client_shm and method in SHM_REFUSED:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, CLIENT_SHM_DISABLED)
            sent = [(k, v) for k, v in metadata.items() if not k.startswith(("grpc-", ":"))]
            # A call without a deadline: time_remaining() is not None there but a huge number.
            remaining = context.time_remaining()
            timeout = remaining if remaining is not None and remaining < 3600 else None
            try:
                return bytes(forward(request, metadata=sent, timeout=timeout))
            except grpc.RpcError as e:
                context.abort(e.code(), e.details() or "")
            return b""

        return grpc.unary_unary_rpc_method_handler(answer)


@contextlib.contextmanager
def triton_like_proxy(
    upstream_url: str, rules: TritonLikeRules | None = None
) -> Iterator[tuple[str, TritonLikeRules]]:
    """A gRPC proxy on 127.0.0.1 in front of a real Triton (`upstream_url`, HOST:PORT) that
    answers like a current Triton started with the `rules`: (its url, the rules)."""
    rules = rules or TritonLikeRules()
    options = [("grpc.max_send_message_length", 2**31 - 1), ("grpc.max_receive_message_length", 2**31 - 1)]
    upstream = grpc.insecure_channel(upstream_url, options=options)
    server = grpc.server(futures.ThreadPoolExecutor(8), options=options)
    port = server.add_insecure_port("127.0.0.1:0")
    server.add_generic_rpc_handlers((_TritonLike(upstream, rules),))
    server.start()
    try:
        yield f"127.0.0.1:{port}", rules
    finally:
        server.stop(0).wait()
        upstream.close()
