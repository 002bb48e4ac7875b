"""What answers on a port that closed a plain gRPC (or HTTP) connection: TLS, HTTP/1.x, gRPC
(HTTP/2), or unknown.

A plain gRPC client gets the same "Socket closed" from Triton's HTTP port and from a TLS
gRPC server (measured: tritonclient 2.73 against the embedded server's HTTP and metrics
ports, and against a TLS grpcio server), so the error text alone cannot tell the user which
fix applies. One TLS handshake, then one HTTP/1.1 request (and, for an HTTP client, an
HTTP/2 greeting) settle it (blocking, up to `timeout_s` each: called once while connecting,
never per request).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import Literal

from app.inference.protocol import Endpoint

Listener = Literal["tls", "http", "grpc"]

# The HTTP/2 connection preface and an empty SETTINGS frame: a gRPC server answers with a
# SETTINGS frame of its own (frame type 4 in the 4th byte of its 9-byte header).
_H2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 4


def what_listens(endpoint: Endpoint, timeout_s: float = 1.0, *, grpc: bool = False) -> Listener | None:
    """`grpc`: also look for a gRPC (HTTP/2) server (what an HTTP client wants to know). None
    too when the endpoint names no single port to look at."""
    if endpoint.host is None or not endpoint.port:
        return None
    address = (endpoint.host or "127.0.0.1", int(endpoint.port))
    if _speaks_tls(address, timeout_s):
        return "tls"
    if _speaks_http1(address, timeout_s):
        return "http"
    if grpc and _speaks_http2(address, timeout_s):
        return "grpc"
    return None


def _speaks_tls(address: tuple[str, int], timeout_s: float) -> bool:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only asking whether it speaks TLS at all
    try:
        with (
            socket.create_connection(address, timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=address[0]),
        ):
            return True
    except ssl.SSLError as e:
        # A TLS alert (e.g. a client certificate is required) is still a TLS server; a reply
        # that is not TLS at all reads as a wrong version / record.
        return "ALERT" in (e.reason or "").upper()
    except OSError:
        return False


def _speaks_http2(address: tuple[str, int], timeout_s: float) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(address, timeout=timeout_s) as sock:
        sock.sendall(_H2_GREETING)
        header = sock.recv(9)
        return len(header) >= 4 and header[3] == _H2_SETTINGS
    return False


def _speaks_http1(address: tuple[str, int], timeout_s: float) -> bool:
    request = f"GET /v2/health/live HTTP/1.1\r\nHost: {address[0]}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError), socket.create_connection(address, timeout=timeout_s) as sock:
        sock.sendall(request.encode("ascii"))
        return sock.recv(16).startswith(b"HTTP/1.")
    return False
