"""The servers behind a balanced gRPC target (`ipv4:H:P,H:P`, `dns:///NAME:PORT`), each as an
`Endpoint` of its own: for the calls whose answer belongs to one server (its statistics),
which a balanced channel would send to whichever server its next pick is."""

from __future__ import annotations

import socket

from app.inference.protocol import Endpoint, ServerProtocol, fleet_addresses


def fleet_members(endpoint: Endpoint) -> tuple[Endpoint, ...]:
    """The servers `endpoint` names: itself when it names one; an `ipv4:`/`ipv6:` list's
    addresses as written; a `dns:` name's addresses resolved now (blocking: not on a GUI
    thread), as gRPC's resolver finds them. () when a name does not resolve."""
    if not endpoint.balanced:
        return (endpoint,)
    addresses = fleet_addresses(endpoint) or _resolved(endpoint.address)
    return tuple(Endpoint(a, ServerProtocol.GRPC, a, endpoint.tls) for a in addresses)


def _resolved(target: str) -> tuple[str, ...]:
    scheme, _, rest = target.partition(":")
    if scheme.lower() != "dns":
        return ()  # unix:, vsock:...: one server behind one path
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]  # without the DNS server's authority: ours is asked
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return ()
    host = host.strip("[]")
    try:
        found = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError:
        return ()
    unique = dict.fromkeys((str(info[4][0]), int(info[4][1])) for info in found)
    return tuple(f"[{ip}]:{p}" if ":" in ip else f"{ip}:{p}" for ip, p in unique)
