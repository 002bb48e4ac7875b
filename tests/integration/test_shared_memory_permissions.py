"""Shared-memory files carry raw input pixels: the server's (made by Triton's Python backend,
named with the server's prefix, 0644 whatever the umask) and the client's are readable by
their user only (0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.transports.shm import PREFIX, SHM_DIR
from app.inference.transports.transport import TransportKind
from app.server.embedded import EmbeddedServer
from app.server.private_regions import PrivateRegions
from tests.integration.procs import eventually


def modes(prefix: str) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in SHM_DIR.glob(f"{prefix}*")}


def test_server_and_client_regions_are_private(triton: EmbeddedServer) -> None:
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url),
            model="face_detector",
            delivery=Delivery(transport=TransportKind.SHM),
        )
    ) as session:
        assert session.infer(skimage.data.astronaut()).ok
        server = modes(triton.shm_prefix)
        client = modes(f"{PREFIX}{os.getpid()}-")
    assert server, "the Python backend made no region"
    assert client, "the session made no region"
    assert {name: mode for name, mode in server.items() if mode != 0o600} == {}
    assert {name: mode for name, mode in client.items() if mode != 0o600} == {}


def test_regions_that_appear_later_are_made_private_too(tmp_path: Path) -> None:
    guard = PrivateRegions(tmp_path, "tviewer-s1-").start()
    try:
        later = tmp_path / "tviewer-s1-_grown"
        other = tmp_path / "someone-else"
        for path in (later, other):
            path.write_bytes(b"pixels")
            path.chmod(0o644)  # what the Python backend gives its regions
        assert eventually(lambda: stat.S_IMODE(later.stat().st_mode) == 0o600, 10)
    finally:
        guard.stop()
    assert stat.S_IMODE(other.stat().st_mode) == 0o644  # another program's file: untouched
