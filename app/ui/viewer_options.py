"""ViewerOptions: what the command line asks of the viewer (`python -m app [...]`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind


@dataclass
class ViewerOptions:
    urls: list[str] = field(default_factory=list)
    model: str | None = None
    open_paths: list[str] = field(default_factory=list)
    camera: str | None = None  # one --camera: the single live view
    cameras: list[str] = field(default_factory=list)  # --camera more than once: the wall
    screenshot: str | None = None
    tritonserver: str | None = None
    # TLS and headers for the servers given by URL (the local server is plain gRPC).
    connection: ConnectionOptions | None = None
    # How requests travel; None: as remembered in the settings (the server panel's choice).
    transport: TransportKind | None = None
    client_batch: int | None = None
    batch_delay_ms: float = 2.0
    # --profile / --labels, already read: for the model opened first (or --model).
    profile_overrides: dict[str, Any] | None = None
    # The Prometheus metrics of a server given by URL (default: its host, port 8002).
    metrics_url: str | None = None
