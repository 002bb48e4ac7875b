"""The states of a connection to a server, and the events a `ConnectionManager` reports."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from app.inference.core.session import TritonSession


class ConnectionState(enum.StrEnum):
    IDLE = "idle"
    STARTING = "starting"  # the embedded server is starting
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"  # was connected; the server stopped answering
    FAILED = "failed"  # could not connect or open the model: the detail says why and what to do
    CLOSED = "closed"


@dataclass(frozen=True)
class StateChanged:
    state: ConnectionState
    detail: str


@dataclass(frozen=True)
class SessionClosing:
    """The session is about to be closed: stop feeding it (reported before the close starts)."""

    session: TritonSession


@dataclass(frozen=True)
class SessionOpened:
    """Connected: the new open session (the state is now CONNECTED, with `detail`)."""

    session: TritonSession
    detail: str


@dataclass(frozen=True)
class ModelsListed:
    """A connect failed on a server that answered: the models it has (to choose another) and
    their states as it said them (name -> "READY"...; empty when not read)."""

    names: tuple[str, ...]
    states: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ProtocolOffered:
    """A connect failed on a port that speaks the other protocol (Triton's HTTP port asked
    over gRPC, or its gRPC port over HTTP): `url` reaches the same server over that one."""

    url: str
    message: str


@dataclass(frozen=True)
class ProfileIgnored:
    """The profile file chosen for `model` could not be read (`why`): the model was opened
    with its detected profile."""

    model: str
    path: str
    why: str


@dataclass(frozen=True)
class LocalServerUnavailable:
    """The embedded server cannot run here at all (no binary, or a frozen build without a
    usable Python): the reason. Not reported for a server that tried to start and failed."""

    reason: str


ConnectionEvent = (
    StateChanged
    | SessionClosing
    | SessionOpened
    | ModelsListed
    | ProtocolOffered
    | ProfileIgnored
    | LocalServerUnavailable
)
