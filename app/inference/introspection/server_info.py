"""The server's own name and version (Help > About). Blocking: run it in an executor."""

from __future__ import annotations

import contextlib

from app.inference.errors import redact
from app.inference.protocol import Endpoint
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.open_channel import open_channel

TIMEOUT_S = 2.0


def server_version(endpoint: Endpoint, options: ConnectionOptions | None = None) -> str:
    """e.g. "triton 2.51.0", or why it could not be read."""
    options = options or ConnectionOptions()
    try:
        channel = open_channel(endpoint, options)
    except Exception as e:
        return f"unknown ({redact(str(e)[:120], options.headers.values())})"
    try:
        meta = channel.server_metadata(headers=options.headers, timeout_s=TIMEOUT_S)
        return f"{meta.get('name', 'server')} {meta.get('version', '?')} over {channel.protocol.label}"
    except Exception as e:
        first_line = (str(e).splitlines() or [type(e).__name__])[0][:120]
        return f"unknown ({redact(first_line, options.headers.values())})"
    finally:
        with contextlib.suppress(Exception):
            channel.close()
