"""Sessions of other models over one session's connections.

The viewer's wall gives each tile its own model choice; a tile whose model is not the
session's gets a session of its own (its own model, profile, request path and in-flight
window) whose channels are the viewer's session's: no new connection to the servers, and
the same TLS, headers and transport settings. The owner's channels stay the owner's: the
sharing session's close() leaves them open and gives them back; the owner's close() waits
(boundedly) for every lent channel to come back, so the sharer's shared-memory regions are
unregistered through them before they close, whichever close starts first (the wall closes
its tiles' sessions on the viewer's `session_closing`, on the executor, as the owner's).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator
from typing import Any, cast

from app.inference.core.session import TritonSession
from app.inference.core.spec import ProfileSource, SessionSpec
from app.inference.protocol import Endpoint
from app.inference.transports.channel import Channel, ChannelFactory, ConnectionOptions
from app.inference.transports.open_channel import open_channel


class SharedChannel:
    """Another session's channel used as this one's: every call goes to it; `in_flight` is
    this session's own count (its pool balances on it); close() leaves the channel open."""

    def __init__(self, inner: Channel, on_close: Callable[[], None] = lambda: None) -> None:
        self._inner = inner
        self._on_close: Callable[[], None] | None = on_close
        self.endpoint = inner.endpoint
        self.protocol = inner.protocol
        self.in_flight = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        """The owner closes its channels; this session only stops using them (and says so:
        the owner's close waits for it, see ConnectionPool.close)."""
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


def sharing_factory(owner: TritonSession) -> ChannelFactory:
    """A channel factory giving the owner's channels to each endpoint in turn (a new channel
    for an endpoint the owner has none to, e.g. a balanced target's member)."""
    pool = owner.pool
    if pool is None:
        raise ValueError("the session is not open: it has no channels to share")
    turns: dict[Endpoint, Iterator[int]] = {}

    def factory(endpoint: Endpoint, options: ConnectionOptions) -> Channel:
        owned = [channel for channel in pool.channels if channel.endpoint == endpoint]
        if not owned:
            return open_channel(endpoint, options)
        turn = next(turns.setdefault(endpoint, itertools.count()))
        pool.lend()
        return cast(Channel, SharedChannel(owned[turn % len(owned)], pool.give_back))

    return factory


def sharing_spec(owner: TritonSession, model: str, profile: ProfileSource) -> SessionSpec:
    """The owner's spec (servers, transport, batching, TLS, headers, limits) for `model`,
    on the owner's channels."""
    return dataclasses.replace(
        owner.spec,
        model=model,
        version="",
        profile=profile,
        channel_factory=sharing_factory(owner),
        model_files=(),
    )
