"""Periodic liveness probe of the servers (blocking calls: run it in an executor)."""

from __future__ import annotations

import contextlib
import threading

from app.inference.errors import redact
from app.inference.protocol import Endpoint
from app.inference.transports.channel import Channel, ChannelFactory, ConnectionOptions
from app.inference.transports.open_channel import open_channel

PROBE_TIMEOUT_S = 1.0


class LivenessProbe:
    """One small client per server (gRPC or HTTP, as its URL says), separate from the session's
    channels so a probe never queues behind inference traffic. `check()` blocks up to ~1 s per server.

    A failed check drops that server's client: the next check connects afresh instead of
    waiting out gRPC's reconnect back-off, so a server that is back is seen at the first
    check after it is ready (then the viewer rebuilds its session's channels too)."""

    def __init__(
        self,
        endpoints: list[Endpoint],
        options: ConnectionOptions | None = None,
        factory: ChannelFactory = open_channel,
    ) -> None:
        self.endpoints = list(endpoints)
        self._options = options or ConnectionOptions()
        self._factory = factory  # the session's kind of channel
        self._clients: dict[Endpoint, Channel] = {}
        self._lock = threading.Lock()  # check() and close() come from executor threads
        self._closed = False

    def check(self) -> tuple[bool, str]:
        """(any server live, message naming the unreachable ones)."""
        down: list[str] = []
        o = self._options
        headers = dict(o.headers)
        with self._lock:
            if self._closed:
                return True, ""
            for endpoint in self.endpoints:
                try:
                    client = self._clients.get(endpoint)
                    if client is None:
                        # Same channel arguments as the session's (short reconnect back-off).
                        client = self._clients[endpoint] = self._factory(endpoint, o)
                    if not client.is_live(headers=headers, timeout_s=PROBE_TIMEOUT_S):
                        down.append(f"{endpoint.url} is not live")
                except Exception as e:
                    down.append(redact(f"{endpoint.url}: {str(e).splitlines()[0][:200]}", headers.values()))
                    self._drop(endpoint)
        return len(down) < len(self.endpoints), "; ".join(down)

    def _drop(self, endpoint: Endpoint) -> None:
        client = self._clients.pop(endpoint, None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()
