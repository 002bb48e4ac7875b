"""Read the server's liveness and model states over its HTTP endpoint (stdlib only).

HTTP, not gRPC, on purpose: this module runs in the process that forks the
server, and gRPC channels must not exist across a fork.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from app.model_states import ModelEntry, ModelState


def is_live(http_url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{http_url}/v2/health/live", timeout=timeout) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def repository_index(http_url: str, timeout: float = 5.0) -> list[ModelEntry]:
    req = urllib.request.Request(
        f"http://{http_url}/v2/repository/index",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        entries = json.loads(r.read() or b"[]")
    return [
        ModelEntry(
            str(e.get("name", "")),
            str(e.get("version", "")),
            ModelState.of(e.get("state")),
            e.get("reason", ""),
        )
        for e in entries
    ]
