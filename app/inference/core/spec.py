"""`SessionSpec`: everything a `TritonSession` is opened with, as one frozen value.

Small typed parts (httpx's `Timeout`/`Limits` style) instead of `**options` dicts across
layers: the command line builds one from argparse (app.commands.common.session_spec), the
viewer from its settings and panel (Viewer.session_spec), and every session of the app is
opened from one by `open_session` (app.inference.core.open_session). A variant is
`dataclasses.replace(spec, model=...)`: the A/B compare, the load sweep and a reconnect
after an outage change one part and keep the rest (transport, batching, TLS, headers).

Adding a setting is one field here with a default, read by `TritonSession(spec)`:
no caller changes. The servers are `Endpoint`s, parsed once from what the user wrote
(app.inference.protocol.parse_endpoints); the protocol is theirs: `http://` / `https://` is
HTTP/REST, `grpc://` or a bare HOST:PORT gRPC (`protocol`); the channels follow it
(`open_channel`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.inference.profiles.profile import load_profile_file
from app.inference.protocol import Endpoint, ServerProtocol
from app.inference.transports.channel import ChannelFactory, ConnectionOptions
from app.inference.transports.transport import TransportKind


@dataclass(frozen=True)
class ProfileSource:
    """How the model's profile is chosen: detected from the model, then a profile file (read
    when the session opens: on whatever thread opens it, never a GUI thread), then
    `overrides` already read (the command line's --profile/--labels; they win)."""

    file: Path | None = None
    overrides: Mapping[str, Any] | None = None

    def load(self) -> dict[str, Any] | None:
        """The overrides to apply (None: the detected profile as it is). Raises ProfileError
        naming the file when it cannot be read."""
        merged: dict[str, Any] = {}
        if self.file is not None:
            merged.update(load_profile_file(self.file))
        if self.overrides:
            merged.update(self.overrides)
        return merged or None


@dataclass(frozen=True)
class Delivery:
    """How requests travel: the transport, and client-side batching (models with
    max_batch_size > 0: up to `client_batch` requests of one shape, or what arrived within
    `batch_delay_ms`, go as one call)."""

    transport: TransportKind = TransportKind.AUTO
    client_batch: int = 1
    batch_delay_ms: float = 2.0

    def __post_init__(self) -> None:
        # Frozen: normalised once here (at least one request per call, no negative delay).
        object.__setattr__(self, "client_batch", max(1, int(self.client_batch)))
        object.__setattr__(self, "batch_delay_ms", max(0.0, float(self.batch_delay_ms)))


# The longest request timeout used: gRPC turns a deadline beyond its range (`--timeout 1e10`)
# into an immediate "deadline exceeded", and a day is longer than any request should wait.
MAX_REQUEST_TIMEOUT_S = 86_400.0


@dataclass(frozen=True)
class Timeouts:
    """`request_s`: each request's deadline (at most MAX_REQUEST_TIMEOUT_S: more is cut to
    it). `retries` None: transient failures (server unreachable) are retried until that
    deadline, so a restart shorter than it fails nothing. `attempt_s`: how long one attempt
    may go unanswered before the request is sent again on a fresh call, within its deadline
    (None: derived from the round trips seen, attempt_timeout.py); `resend_unanswered` False:
    never (an attempt then waits for its answer until the deadline)."""

    request_s: float = 10.0
    retries: int | None = None
    retry_backoff_s: float = 0.05
    attempt_s: float | None = None
    resend_unanswered: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.request_s) and self.request_s > 0):
            raise ValueError(f"the timeout must be a positive number of seconds, not {self.request_s}")
        if self.attempt_s is not None and not (math.isfinite(self.attempt_s) and self.attempt_s > 0):
            raise ValueError(
                f"the attempt timeout must be a positive number of seconds, not {self.attempt_s}"
            )
        if self.request_s > MAX_REQUEST_TIMEOUT_S:
            object.__setattr__(self, "request_s", MAX_REQUEST_TIMEOUT_S)


@dataclass(frozen=True)
class Limits:
    """`max_in_flight`: the session's window (each job has its own inside it).
    `send_in_caller`: submit() prepares and sends on the caller's thread (one thread hop less
    per request) for callers that may block (the command line); the GUI keeps it off."""

    max_in_flight: int = 64
    decode_workers: int = 2
    send_in_caller: bool = False


@dataclass(frozen=True)
class SessionSpec:
    """What to open: servers, model, profile, how requests travel, deadlines, TLS/headers,
    limits. `endpoints` (parsed where the user gave them: `parse_endpoints`) empty means "the
    embedded server": the connection manager (or the command line's `serving`) starts it and
    fills its address in."""

    endpoints: tuple[Endpoint, ...] = ()
    model: str | None = None  # None: face_detector, or the only model ready
    version: str = ""  # "": the server's choice (its version policy's latest)
    profile: ProfileSource = field(default_factory=ProfileSource)
    delivery: Delivery = field(default_factory=Delivery)
    timeouts: Timeouts = field(default_factory=Timeouts)
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)  # TLS, headers, channels
    limits: Limits = field(default_factory=Limits)
    # None: the channel for the endpoint (gRPC or HTTP by its scheme). The seam tests use to drive
    # rare orderings.
    channel_factory: ChannelFactory | None = None
    # Triton's Prometheus metrics (HOST:PORT or a URL); None: not known (for a server given
    # by --url, its gRPC host on port 8002 is the usual guess: default_metrics_url).
    metrics_url: str | None = None
    # Model files (.onnx, .tflite) to load on the server before the sessions open (`--model
    # PATH`; `model` then names the file's model): the command line's `serving` loads them.
    model_files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen: normalised once here (a list given by a caller).
        object.__setattr__(self, "endpoints", tuple(self.endpoints))
        object.__setattr__(self, "version", str(self.version or "").strip())

    @property
    def embedded(self) -> bool:
        """No server given: the embedded one is meant."""
        return not self.endpoints

    @property
    def urls(self) -> tuple[str, ...]:
        """The servers as the user wrote them (for messages)."""
        return tuple(e.url for e in self.endpoints)

    @property
    def protocol(self) -> ServerProtocol:
        """gRPC or HTTP, by the first URL's scheme (the embedded server: gRPC). A session
        refuses servers of both protocols at once."""
        return self.endpoints[0].protocol if self.endpoints else ServerProtocol.GRPC
