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
