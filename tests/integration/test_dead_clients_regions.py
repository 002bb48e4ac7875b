"""Clients killed while they use shared memory leave their regions registered in a
long-running server (the server keeps them mapped: memory held for good). The next session
that starts unregisters them, by name, only those whose owner process has ended: the
server's shared-memory status is back to what it was before the clients ran."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import skimage.data
import tritonclient.grpc as grpcclient

from app.inference.core.session import TritonSession
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.transports.shm import PREFIX, SHM_DIR
from app.inference.transports.transport import TransportKind
from app.server.embedded import EmbeddedServer
from tests.integration.procs import eventually
from tests.integration.test_cli_infer import bgr

ROOT = Path(__file__).resolve().parents[2]


def registered(server: EmbeddedServer) -> set[str]:
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        status = client.get_system_shared_memory_status(as_json=True)
    return set((status or {}).get("regions", {}))


def of(pid: int, names: set[str]) -> set[str]:
    return {n for n in names if n.startswith(f"{PREFIX}{pid}-")}


def test_a_new_session_unregisters_the_regions_of_killed_clients(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    data = cv2.imencode(".jpg", bgr(skimage.data.astronaut()))[1].tobytes()
    for i in range(3000):  # more than the clients get through before they are killed
        (folder / f"img_{i:04d}.jpg").write_bytes(data)
    command = [
        *(sys.executable, "-m", "app", "infer", "--url", triton.grpc_url, "--transport", "shm"),
        *("--concurrency", "8", "--output", os.devnull, str(folder)),
    ]
    # The server is shared with every test (their clients come and go meanwhile): the test
    # follows its own processes only. A live owner, this process, keeps its session open.
    with TritonSession(
        SessionSpec(
            endpoints=parse_endpoints(triton.grpc_url),
            model="face_detector",
            delivery=Delivery(transport=TransportKind.SHM),
        )
    ) as bystander:
        assert bystander.infer(skimage.data.astronaut()).ok
        live = of(os.getpid(), registered(triton))
        assert live, "the live session's regions are registered"
        clients = [
            subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(3)
        ]
        try:
            # Each client registers its regions (one slot per request in flight, up to 8).
            assert eventually(lambda: all(len(of(c.pid, registered(triton))) >= 4 for c in clients), 120)
            for client in clients:
                client.send_signal(signal.SIGKILL)
        finally:
            for client in clients:
                if client.poll() is None:
                    client.kill()
                client.wait()
        left = set().union(*(of(c.pid, registered(triton)) for c in clients))
        assert all(of(c.pid, left) for c in clients), "each killed client left registrations"

        with TritonSession(
            SessionSpec(
                endpoints=parse_endpoints(triton.grpc_url),
                model="face_detector",
                delivery=Delivery(transport=TransportKind.SHM),
            )
        ) as session:
            assert session.transport is not None and session.transport.kind is TransportKind.SHM
            now = registered(triton)
            assert not now & left, "the dead clients' registrations are gone"
            assert live <= now, "a live owner's registrations stay"
            assert session.infer(skimage.data.astronaut()).ok
        assert bystander.infer(skimage.data.astronaut()).ok  # its regions still work
    assert not registered(triton) & left
    assert not [p.name for p in SHM_DIR.glob(f"{PREFIX}*") if p.name in left]  # their files too
