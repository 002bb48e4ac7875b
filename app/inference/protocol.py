"""Which protocol a server URL asks for: `http://HOST:PORT` or `https://HOST:PORT` is
HTTP/REST, `grpc://HOST:PORT` or a bare `HOST:PORT` is gRPC (both the KServe v2 inference
protocol). A URL is parsed here once, where the user gives it, into an `Endpoint` that the
session, its pool and the channels carry (none of them parses a URL again).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
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
    """A server's address, parsed once where the user gives it (the command line, the viewer's
    settings and panel: `parse_url`) and carried typed from there to the channel.

    `url`: as the user wrote it (messages name it). `address`: what the client library is
    given, without the scheme: for HTTP, HOST:PORT plus a path prefix (behind an ingress); for
    gRPC, a gRPC target: one HOST:PORT today. A target naming several servers, or a name for
    gRPC's resolver (`ipv4:H:P,H:P`, `dns:///NAME:PORT`, balanced by gRPC's round_robin), is one
    Endpoint too: it has no single host (`host` None, `port` ""). `tls`: https:// asked for TLS."""

    url: str
    protocol: ServerProtocol
    address: str
    tls: bool = False

    @property
    def host(self) -> str | None:
        """ "127.0.0.1:8001" -> "127.0.0.1", "[::1]:8001" -> "::1", "localhost" -> "localhost";
        None when the address is a gRPC target that names no single host."""
        hostport = self._hostport()
        if hostport is None:
            return None
        if hostport.startswith("["):
            return hostport[1 : hostport.index("]")] if "]" in hostport else hostport[1:]
        return hostport.rsplit(":", 1)[0] if hostport.count(":") == 1 else hostport

    @property
    def port(self) -> str:
        """The port as written ("" when none is, or when there is no single host)."""
        hostport = self._hostport()
        if hostport is None:
            return ""
        head, sep, tail = hostport.rpartition(":")
        if not sep or not tail.isdigit() or (head.count(":") and not head.endswith("]")):
            return ""
        return tail

    @property
    def balanced(self) -> bool:
        """A gRPC target for gRPC's own resolver (`ipv4:H:P,H:P`, `dns:///NAME:PORT`...): the
        channel balances its calls over every address the target names (round_robin)."""
        return self.protocol is ServerProtocol.GRPC and (
            "," in self.address or self.address.lower().startswith(_GRPC_RESOLVERS)
        )

    def _hostport(self) -> str | None:
        if self.balanced:
            return None
        return self.address.split("/", 1)[0]


# The name-resolver prefixes of a gRPC target (https://grpc.github.io/grpc/core/md_doc_naming.html).
_GRPC_RESOLVERS = ("ipv4:", "ipv6:", "dns:", "unix:", "unix-abstract:", "vsock:")
# Those that list their servers' addresses (HOST:PORT,HOST:PORT) instead of a name to resolve.
_ADDRESS_LISTS = ("ipv4:", "ipv6:")


class UrlError(ValueError):
    """A server URL that cannot be used (an unknown scheme, no host)."""


class MixedProtocolsError(UrlError):
    """Servers of both protocols given for one session."""


def parse_url(url: str) -> Endpoint:
    """`url` as written by the user (UrlError when it cannot be a server's address)."""
    text = url.strip()
    resolver = text.removeprefix("grpc://")
    if resolver.lower().startswith(_GRPC_RESOLVERS):
        return Endpoint(text, ServerProtocol.GRPC, _checked_target(url, resolver))
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
    if protocol is ServerProtocol.GRPC and "," in rest:
        raise UrlError(
            f"{url}: several servers in one address: write ipv4:H:P,H:P (one target, balanced by "
            "gRPC) or give --url once per server"
        )
    if not rest or rest.startswith((":", "/")):
        raise UrlError(f"{url}: no host")
    return Endpoint(text, protocol, rest, tls)


def _checked_target(url: str, target: str) -> str:
    """A gRPC resolver target as given, once its addresses are known to be usable (UrlError
    naming the part that is not)."""
    scheme, _, rest = target.partition(":")
    lowered = scheme.lower() + ":"
    if lowered == "dns:":
        # dns:NAME:PORT, dns:///NAME:PORT or dns://AUTHORITY/NAME:PORT (a DNS server to ask).
        name = rest
        if rest.startswith("//"):
            _authority, slash, name = rest[2:].partition("/")
            name = name if slash else ""
        if not name or name.startswith(":"):
            raise UrlError(f"{url}: no host name (a DNS target is dns:///NAME:PORT)")
        return target
    if lowered in _ADDRESS_LISTS:
        addresses = [address.strip() for address in rest.split(",")]
        for address in addresses:
            head, sep, port = address.rpartition(":")
            if not sep or not head or not port.isdigit():
                raise UrlError(f"{url}: '{address}' is not HOST:PORT (a list of servers is {lowered}H:P,H:P)")
        return f"{scheme}:{','.join(addresses)}"  # without spaces, which gRPC's parser refuses
    if not rest:
        raise UrlError(f"{url}: nothing after '{scheme}:'")
    return target


def fleet_addresses(endpoint: Endpoint) -> tuple[str, ...]:
    """The HOST:PORT addresses an `ipv4:`/`ipv6:` list names, as written (each a server of the
    fleet); () for any other endpoint (a `dns:` name is resolved where it is needed)."""
    scheme, _, rest = endpoint.address.partition(":")
    if not endpoint.balanced or scheme.lower() + ":" not in _ADDRESS_LISTS:
        return ()
    return tuple(address.strip() for address in rest.split(","))


def parse_endpoints(urls: str | Iterable[str]) -> tuple[Endpoint, ...]:
    """The servers of one session, each parsed (UrlError naming the one that cannot be used;
    MixedProtocolsError when they do not all speak one protocol)."""
    endpoints = tuple(parse_url(url) for url in ([urls] if isinstance(urls, str) else urls))
    if len({e.protocol for e in endpoints}) > 1:
        raise MixedProtocolsError("give servers of one protocol (all gRPC or all HTTP), not both")
    return endpoints


def protocol_of(url: str) -> ServerProtocol:
    """The protocol `url` asks for (gRPC for anything that does not parse: its error comes later)."""
    try:
        return parse_url(url).protocol
    except UrlError:
        return ServerProtocol.GRPC


def same_server_over(
    endpoint: Endpoint, protocol: ServerProtocol, port: str | int | None = None
) -> str | None:
    """`endpoint`'s host reached over `protocol` (on `port` when given): the URL an offer such
    as "that is Triton's HTTP port: connect over HTTP?" connects to. None when the endpoint
    names no single host."""
    host = endpoint.host
    if host is None:
        return None
    hostport = f"[{host}]" if ":" in host else host
    port = str(port) if port is not None else endpoint.port
    address = f"{hostport}:{port}" if port else hostport
    return f"http://{address}" if protocol is ServerProtocol.HTTP else address
