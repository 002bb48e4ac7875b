"""The states of the viewer's connection to a server."""

from __future__ import annotations

import enum


class ConnectionState(enum.StrEnum):
    IDLE = "idle"
    STARTING = "starting"  # the embedded server is starting
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"  # was connected; the server stopped answering
    FAILED = "failed"  # could not connect or open the model: the detail says why and what to do
    CLOSED = "closed"
