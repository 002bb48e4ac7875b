"""What answers on a port that closed a plain gRPC connection: TLS, HTTP/1.x, or unknown.

A plain gRPC client gets the same "Socket closed" from Triton's HTTP port and from a TLS
gRPC server (measured: tritonclient 2.73 against the embedded server's HTTP and metrics
ports, and against a TLS grpcio server), so the error text alone cannot tell the user which
fix applies. One TLS handshake, then one HTTP/1.1 request, settle it (blocking, up to
`timeout_s` each: called once while connecting, never per request).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import Literal

Listener = Literal["tls", "http"]


def split_url(url: str) -> tuple[str, int] | None:
    """'host:port' or '[v6]:port' -> (host, port); None when there is no port."""
    host, sep, port = url.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def what_listens(url: str, timeout_s: float = 1.0) -> Listener | None:
    address = split_url(url)
    if address is None:
        return None
    if _speaks_tls(address, timeout_s):
        return "tls"
    if _speaks_http1(address, timeout_s):
        return "http"
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


def _speaks_http1(address: tuple[str, int], timeout_s: float) -> bool:
    request = f"GET /v2/health/live HTTP/1.1\r\nHost: {address[0]}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError), socket.create_connection(address, timeout=timeout_s) as sock:
        sock.sendall(request.encode("ascii"))
        return sock.recv(16).startswith(b"HTTP/1.")
    return False
