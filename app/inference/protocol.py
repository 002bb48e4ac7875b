"""Which protocol a server URL asks for: `http://HOST:PORT` or `https://HOST:PORT` is
HTTP/REST, `grpc://HOST:PORT` or a bare `HOST:PORT` is gRPC (both the KServe v2 inference
protocol). Pure functions: the session, the channels and every command read URLs here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ServerProtocol(enum.StrEnum):
    GRPC = "grpc"
    HTTP = "http"

    @property
    def label(self) -> str:
        return "gRPC" if self is ServerProtocol.GRPC else "HTTP"


_SCHEMES = {
    "grpc": (ServerProtocol.GRPC, False),
    "http": (ServerProtocol.HTTP, False),
    "https": (ServerProtocol.HTTP, True),
}


@dataclass(frozen=True)
class Endpoint:
    """A server URL taken apart. `address`: HOST:PORT (plus a path prefix for HTTP, e.g. behind
    an ingress), as tritonclient's clients want it (no scheme). `tls`: https:// asked for TLS."""

    url: str
    protocol: ServerProtocol
    address: str
    tls: bool = False

    @property
    def host(self) -> str:
        """ "127.0.0.1:8001" -> "127.0.0.1", "[::1]:8001" -> "::1", "localhost" -> "localhost"."""
        hostport = self.address.split("/", 1)[0]
        if hostport.startswith("["):
            return hostport[1 : hostport.index("]")] if "]" in hostport else hostport[1:]
        return hostport.rsplit(":", 1)[0] if hostport.count(":") == 1 else hostport

    @property
    def port(self) -> str:
        """The port as written ("" when none is)."""
        hostport = self.address.split("/", 1)[0]
        head, sep, tail = hostport.rpartition(":")
        if not sep or not tail.isdigit() or (head.count(":") and not head.endswith("]")):
            return ""
        return tail

    @property
    def with_scheme(self) -> str:
        """The URL with its scheme written out (a bare HOST:PORT gets grpc://)."""
        scheme = "https" if self.tls else self.protocol.value
        return f"{scheme}://{self.address}"


class UrlError(ValueError):
    """A server URL that cannot be used (an unknown scheme, no host)."""


def parse_url(url: str) -> Endpoint:
    """`url` as written by the user (UrlError when it cannot be a server's address)."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        protocol, tls, rest = ServerProtocol.GRPC, False, text
    else:
        known = _SCHEMES.get(scheme.lower())
        if known is None:
            raise UrlError(
                f"{url}: unknown scheme '{scheme}://' (use http://, https://, grpc:// or HOST:PORT for gRPC)"
            )
        protocol, tls = known
    rest = rest.rstrip("/")
    if protocol is ServerProtocol.GRPC and "/" in rest:
        raise UrlError(f"{url}: a gRPC address is HOST:PORT, without a path")
    if not rest or rest.startswith((":", "/")):
        raise UrlError(f"{url}: no host")
    return Endpoint(text, protocol, rest, tls)


def protocol_of(url: str) -> ServerProtocol:
    """The protocol `url` asks for (gRPC for anything that does not parse: its error comes later)."""
    try:
        return parse_url(url).protocol
    except UrlError:
        return ServerProtocol.GRPC


def same_server_over(url: str, protocol: ServerProtocol, port: str | int | None = None) -> str:
    """`url`'s host reached over `protocol` (on `port` when given): the URL an offer such as
    "that is Triton's HTTP port: connect over HTTP?" connects to."""
    endpoint = parse_url(url)
    host = endpoint.host
    hostport = f"[{host}]" if ":" in host else host
    port = str(port) if port is not None else endpoint.port
    address = f"{hostport}:{port}" if port else hostport
    return f"http://{address}" if protocol is ServerProtocol.HTTP else address
