"""Where the Server view reads Triton's Prometheus metrics: the address typed in its field for
this server (this run), else the embedded server's own metrics URL when connected to it, else
`--metrics-url`, else the address remembered for this server, else its host on Triton's
default port 8002."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.inference.introspection.server_metrics import default_metrics_url, metrics_url
from app.inference.protocol import Endpoint


@dataclass(frozen=True)
class EmbeddedMetrics:
    """The embedded server's gRPC address and its metrics URL (EmbeddedServer.metrics_url)."""

    grpc_url: str
    metrics_url: str


def choose_metrics_url(
    session_endpoints: Sequence[Endpoint],
    embedded: EmbeddedMetrics | None,
    option: str | None,
    remembered: str | None = None,
    typed: str | None = None,
) -> str | None:
    """The metrics page for a session on `session_endpoints`. `embedded`: the embedded server's
    addresses when one runs; `option`: the viewer's --metrics-url; `remembered`: the address
    typed for this server in an earlier run; `typed`: typed in this run. None when there is no
    session."""
    if not session_endpoints:
        return None
    if typed:
        return metrics_url(typed)
    if embedded is not None and session_endpoints[0].url == embedded.grpc_url:
        return embedded.metrics_url
    for address in (option, remembered):
        if address:
            return metrics_url(address)
    return default_metrics_url(session_endpoints[0])
