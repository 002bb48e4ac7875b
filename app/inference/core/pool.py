"""Channels to one or more servers: several per server, least-loaded first, failing servers probed."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from app.inference.core.fleet import fleet_members
from app.inference.protocol import Endpoint
from app.inference.transports.channel import Channel, ChannelFactory, ConnectionOptions
from app.inference.transports.open_channel import open_channel


class ServerHealth:
    """Whether a server answers; after a long outage only a probe now and then gets through.
    Changed only under the pool's lock."""

    def __init__(self, probe_interval_s: float = 1.0) -> None:
        self.unreachable_since: float | None = None
        self.last_probe = 0.0
        self.probe_interval_s = probe_interval_s
        self.last_error = ""

    def mark_ok(self) -> None:
        self.unreachable_since = None

    def mark_unreachable(self, message: str) -> None:
        if self.unreachable_since is None:
            self.unreachable_since = self.last_probe = time.monotonic()
        self.last_error = message

    def down_for(self) -> float:
        return 0.0 if self.unreachable_since is None else time.monotonic() - self.unreachable_since


# How long close() waits for the sessions borrowing this pool's channels to give them back.
LENT_WAIT_S = 3.0


class ConnectionPool:
    """`channels_per_server` channels to each server; `acquire` picks the least-loaded usable one."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        options: ConnectionOptions,
        factory: ChannelFactory = open_channel,
    ) -> None:
        if not endpoints:
            raise ValueError("at least one server URL is needed")
        self.endpoints = list(dict.fromkeys(endpoints))
        self.options = options
        self.health = {endpoint: ServerHealth() for endpoint in self.endpoints}
        self.channels: list[Channel] = [
            factory(endpoint, options)
            for endpoint in self.endpoints
            for _ in range(max(1, options.channels_per_server))
        ]
        self._lock = threading.Lock()
        self._lent = 0  # channels lent to sessions of other models (shared_channels.py)
        self._given_back = threading.Condition(self._lock)
        self._factory = factory
        # A balanced target's servers, each with a channel of its own (server_channels).
        self._members: dict[Endpoint, list[Channel]] = {}

    def acquire(self, give_up_after_s: float) -> tuple[Channel | None, str]:
        """The channel to use, or (None, why) when every server has been down for too long.

        A server down for longer than `give_up_after_s` gets one probe request per
        probe interval instead of every request: no hammering, no endless waiting.
        """
        now = time.monotonic()
        with self._lock:
            channel = self._probe_due(now) or self._least_loaded(give_up_after_s)
            if channel is None:
                h = min(self.health.values(), key=lambda health: health.down_for())
                return None, f"{h.last_error} (unreachable for {h.down_for():.1f} s; not sending)"
            channel.in_flight += 1
            return channel, ""

    def _probe_due(self, now: float) -> Channel | None:
        """A channel of a failing server whose turn for a probe request has come (one per interval):
        that is how a server that went away is noticed coming back."""
        for ch in self.channels:
            h = self.health[ch.endpoint]
            if h.unreachable_since is not None and now - h.last_probe >= h.probe_interval_s:
                h.last_probe = now
                return ch
        return None

    def _least_loaded(self, give_up_after_s: float) -> Channel | None:
        # Healthy servers first; ones failing for less than `give_up_after_s` only when
        # no healthy one is left; ones down for longer get nothing but probes.
        healthy = [ch for ch in self.channels if self.health[ch.endpoint].unreachable_since is None]
        usable = healthy or [
            ch for ch in self.channels if self.health[ch.endpoint].down_for() <= give_up_after_s
        ]
        return min(usable, key=lambda c: c.in_flight) if usable else None

    def first_channel(self, endpoint: Endpoint) -> Channel:
        """A channel to `endpoint`, for one-off calls (health checks, discovery)."""
        return next(ch for ch in self.channels if ch.endpoint == endpoint)

    def server_channels(self) -> list[Channel]:
        """One channel to each server, for calls whose answer is one server's own (its
        statistics): a balanced target (`Endpoint.balanced`) is asked server by server through
        channels of their own, opened on first use (a `dns:` name resolved then) and closed
        with the pool; any other endpoint through its first channel."""
        channels: list[Channel] = []
        for endpoint in self.endpoints:
            if not endpoint.balanced:
                channels.append(self.first_channel(endpoint))
                continue
            with self._lock:
                members = self._members.get(endpoint)
            if members is None:
                found = fleet_members(endpoint)
                opened = [self._factory(member, self.options) for member in found]
                with self._lock:
                    members = self._members.setdefault(endpoint, opened)
                if members is not opened:  # another thread opened them first
                    for channel in opened:
                        channel.close()
            channels.extend(members or [self.first_channel(endpoint)])
        return channels

    def mark_ok(self, endpoint: Endpoint) -> None:
        with self._lock:
            self.health[endpoint].mark_ok()

    def mark_unreachable(self, endpoint: Endpoint, message: str) -> None:
        with self._lock:
            self.health[endpoint].mark_unreachable(message)

    def release(self, channel: Channel) -> None:
        with self._lock:
            channel.in_flight -= 1

    def lend(self) -> None:
        """A channel of this pool is used by another session from now on."""
        with self._lock:
            self._lent += 1

    def give_back(self) -> None:
        """A lent channel is no longer used."""
        with self._given_back:
            self._lent -= 1
            self._given_back.notify_all()

    def close(self, lent_wait_s: float = LENT_WAIT_S) -> None:
        # Why wait: a session borrowing our channels unregisters its shared-memory regions
        # through them when it closes; closed first, they would stay registered on the server.
        # Bounded, as a borrower that never closes must not hold this close up.
        with self._given_back:
            self._given_back.wait_for(lambda: self._lent <= 0, lent_wait_s)
            members = [ch for chs in self._members.values() for ch in chs]
            self._members.clear()
        for ch in [*self.channels, *members]:
            ch.close()
