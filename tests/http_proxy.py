"""A small real HTTP/1.1 reverse proxy on 127.0.0.1 in front of a server's HTTP port, for what
the servers themselves will not do on demand: answer 404 to Triton's statistics (a server
without that extension), cut replies short with a TCP reset (a proxy or load balancer
failing mid-response), record the headers every call carries, answer inference with an error
that echoes those headers the way careless servers do (lower-cased, decoded, embedded), serve
TLS (a self-signed certificate made by the test), and answer like a current Triton started
without --allow-client-shm=true or with --http-restricted-api. Everything else is forwarded as it
is."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Triton's own text (server src/common.h), HTTP 501.
CLIENT_SHM_DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)


def category_of(path: str) -> str:
    """The restricted-API category Triton files an HTTP path under (src/http_server.cc)."""
    if "sharedmemory" in path:
        return "shared-memory"
    if path.startswith("/v2/repository"):
        return "model-repository"
    for suffix, category in (
        ("/stats", "statistics"),
        ("/trace/setting", "trace"),
        ("/config", "model-config"),
    ):
        if path.endswith(suffix):
            return category
    if path.endswith("/infer"):
        return "inference"
    return "health" if "/health/" in path or path.endswith("/ready") else "metadata"


@dataclass
class ProxyRules:
    """What the proxy does; changed by the test at any time (under `lock`)."""

    statistics_404: bool = False
    config_404: bool = False
    index_404: bool = False  # no repository index (a server without Triton's repository extension)
    resets_left: int = 0  # inference replies still to cut short (-1: every one)
    # Inference replies that announce this many bytes (a hostile or broken server): in their
    # Content-Length (the real body follows, then the connection closes), or as the size of
    # their JSON header (Inference-Header-Content-Length).
    announce_length: int = 0
    announce_header_length: int = 0
    echo_headers: bool = False  # inference answered 400, its error quoting the request's headers
    lock: threading.Lock = field(default_factory=threading.Lock)
    headers: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (path, headers)
    resets_done: int = 0
    # As Triton 2.69+ without --allow-client-shm=true: shared-memory (un)registrations refused.
    allow_client_shm: bool = True
    # As --http-restricted-api=<category>:<header>=<value>: category -> (header, value).
    restricted: dict[str, tuple[str, str]] = field(default_factory=dict)

    def refusal(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, error text) Triton would answer instead of serving the call, or None."""
        restriction = self.restricted.get(category_of(path))
        if restriction is not None and headers.get(restriction[0]) != restriction[1]:
            return 403, f"This API is restricted, expecting header '{restriction[0]}'"
        if not self.allow_client_shm and "sharedmemory/region/" in path and method == "POST":
            return 501, CLIENT_SHM_DISABLED
        return None

    def take_reset(self) -> bool:
        with self.lock:
            if self.resets_left == 0:
                return False
            if self.resets_left > 0:
                self.resets_left -= 1
            self.resets_done += 1
            return True


@dataclass
class Proxy:
    port: int
    rules: ProxyRules
    tls: bool

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"


def _handler(upstream: tuple[str, int], rules: ProxyRules) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the client expects

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

        def _forward(self, method: str) -> None:
            length = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(length) if length else b""
            lowered = {k.lower(): v for k, v in self.headers.items()}
            with rules.lock:
                rules.headers.append((self.path, lowered))
            refused = rules.refusal(method, self.path, lowered)
            if refused is not None:
                body = json.dumps({"error": refused[1]}).encode()
                self._answer(refused[0], body, {"Content-Type": "application/json"})
                return
            if (
                (rules.statistics_404 and self.path.endswith("/stats"))
                or (rules.config_404 and self.path.endswith("/config"))
                or (rules.index_404 and self.path.endswith("/repository/index"))
            ):
                self._answer(404, b'{"error":"Not Found"}', {"Content-Type": "application/json"})
                return
            if rules.echo_headers and method == "POST" and self.path.endswith("/infer"):
                self._answer(400, _echo(self.headers), {"Content-Type": "application/json"})
                return
            connection = http.client.HTTPConnection(*upstream, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                connection.request(method, self.path, body=body, headers=headers)
                reply = connection.getresponse()
                data = reply.read()
                kept = {
                    k: v
                    for k, v in reply.getheaders()
                    if k.lower() not in ("transfer-encoding", "connection")
                }
            finally:
                connection.close()
            if method == "POST" and self.path.endswith("/infer") and rules.take_reset():
                self._cut_short(reply.status, data, kept)
                return
            if method == "POST" and self.path.endswith("/infer") and rules.announce_header_length:
                kept = {k: v for k, v in kept.items() if k.lower() != "inference-header-content-length"}
                kept["Inference-Header-Content-Length"] = str(rules.announce_header_length)
            if method == "POST" and self.path.endswith("/infer") and rules.announce_length:
                self._announce(reply.status, data, kept, rules.announce_length)
                return
            self._answer(reply.status, data, kept)

        def _head(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()

        def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self._head(status, data, headers)
            self.wfile.write(data)

        def _announce(self, status: int, data: bytes, headers: dict[str, str], length: int) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            self.close_connection = True

        def _cut_short(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            """The status line, the headers and half the body, then a TCP reset."""
            self._head(status, data, headers)
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            # SO_LINGER 0: close() sends RST instead of FIN ("connection reset by peer").
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.close()

    return Handler


def _echo(headers: Any) -> bytes:
    """An error quoting every header not as sent: lower-cased, a -bin value base64-decoded,
    the token of an Authorization alone, inside other words."""
    quoted = []
    for key, value in headers.items():
        key = key.lower()
        if key.endswith("-bin"):
            decoded = base64.b64decode(value + "=" * (-len(value) % 4))
            quoted.append(f"{key} decoded as {decoded.decode('utf-8', 'replace')!r}")
        elif key == "authorization":
            quoted.append(f"token{value.split()[-1]}rejected; header was {value.lower()}")
        elif key.startswith("x-"):
            quoted.append(f"{key}={value.upper()}")
    return json.dumps({"error": "unauthorized: " + "; ".join(quoted)}).encode()


@contextlib.contextmanager
def http_proxy(upstream_port: int, certificate: tuple[Path, Path] | None = None) -> Iterator[Proxy]:
    """A proxy to 127.0.0.1:`upstream_port`; with `certificate` (key, cert) it serves TLS."""
    rules = ProxyRules()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(("127.0.0.1", upstream_port), rules))
    server.daemon_threads = True
    if certificate is not None:
        key, cert = certificate
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="http-proxy", daemon=True)
    thread.start()
    try:
        yield Proxy(server.server_address[1], rules, certificate is not None)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
