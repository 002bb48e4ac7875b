"""The server's own name and version (Help > About). Blocking: run it in an executor."""

from __future__ import annotations

import contextlib

from app.inference.errors import redact
from app.inference.transports.channel import ConnectionOptions, GrpcChannel

TIMEOUT_S = 2.0


def server_version(url: str, options: ConnectionOptions | None = None) -> str:
    """e.g. "triton 2.51.0", or why it could not be read."""
    options = options or ConnectionOptions()
    channel = GrpcChannel(url, options)
    try:
        meta = channel.client.get_server_metadata(
            headers=dict(options.headers), as_json=True, client_timeout=TIMEOUT_S
        )
        return f"{meta.get('name', 'server')} {meta.get('version', '?')}"
    except Exception as e:
        first_line = (str(e).splitlines() or [type(e).__name__])[0][:120]
        return f"unknown ({redact(first_line, options.headers.values())})"
    finally:
        with contextlib.suppress(Exception):
            channel.close()
