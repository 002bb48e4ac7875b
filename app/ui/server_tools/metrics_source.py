"""Where the Server view reads Triton's Prometheus metrics: the embedded server's own metrics
port, else `--metrics-url`, else the gRPC host on Triton's default port 8002."""

from __future__ import annotations

from collections.abc import Sequence

from app.inference.introspection.server_metrics import default_metrics_url, metrics_url
from app.inference.protocol import Endpoint


def choose_metrics_url(
    session_endpoints: Sequence[Endpoint],
    embedded: tuple[str, int] | None,
    option: str | None,
) -> str | None:
    """The metrics page for a session on `session_endpoints`. `embedded`: the embedded server's
    (gRPC address, metrics port) when one runs; `option`: the viewer's --metrics-url. None
    when there is no session."""
    if not session_endpoints:
        return None
    if embedded is not None and session_endpoints[0].url == embedded[0]:
        return metrics_url(f"127.0.0.1:{embedded[1]}")
    if option:
        return metrics_url(option)
    return default_metrics_url(session_endpoints[0])
