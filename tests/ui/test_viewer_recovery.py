"""Outages seen from the whole viewer (real servers, real qasync loop): a remote server gone
for longer than the request timeout and back on the same port; the viewer's own embedded
server killed; the restart limit and the Reconnect button."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from skimage import data

from app.pipeline.connection.state import ConnectionState
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from app.ui.viewer import Viewer
from tests.media import make_face_video
from tests.ui.viewer_fixtures import Harness, image_folder, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]

SESSION_TIMEOUT_S = 10.0  # TritonSession's default request timeout, which the viewer uses


@pytest.fixture
def remote_ports() -> dict[str, int]:
    grpc_port, http_port, metrics_port = free_ports(3)
    return {"grpc_port": grpc_port, "http_port": http_port, "metrics_port": metrics_port}


@pytest.fixture
def servers() -> Iterator[list[EmbeddedServer]]:
    """Servers a test starts; every one stopped at the end, whatever happened."""
    started: list[EmbeddedServer] = []
    yield started
    for server in started:
        server.stop(timeout=0)


async def _start(server: EmbeddedServer) -> None:
    await asyncio.get_running_loop().run_in_executor(None, server.start)


def batch_ok(harness: Harness, viewer: Viewer, folder: Path, count: int) -> None:
    finished: list[int] = []  # the jobs whose "finished" reached the GUI thread

    def on_finished(job_id: int, _counts: object, _seconds: float) -> None:
        finished.append(job_id)

    viewer.runner.finished.connect(on_finished)
    try:
        viewer.open_paths([str(folder)])
        harness.run(until(lambda: bool(finished), what="the batch to finish"))
    finally:
        viewer.runner.finished.disconnect(on_finished)
    counts = viewer.runner.latest_counts()
    assert counts is not None and counts.total == count
    assert counts.ok == count, counts


def test_remote_server_back_after_a_long_outage(
    harness: Harness, tmp_path: Path, remote_ports: dict[str, int], servers: list[EmbeddedServer]
) -> None:
    servers.append(EmbeddedServer(model_repository(), **remote_ports).start())
    url = servers[0].grpc_url
    video = tmp_path / "face.avi"
    make_face_video(video, frames=30, fps=15, size=(320, 240))
    viewer = harness.viewer(url, "face_detector")
    harness.connected(viewer)
    viewer.live.options.loop = True
    viewer.live.open(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 5, what="the live stream to play"))
    first_session = viewer.connection.session

    servers[0].stop(timeout=0)
    harness.run(until(lambda: viewer.connection.state == ConnectionState.DISCONNECTED, what="the outage"))
    assert not viewer.window.banner.isHidden()
    assert viewer.window.server_panel.connect_button.text() == "Reconnect"
    harness.run(asyncio.sleep(SESSION_TIMEOUT_S + 1.0))  # longer than a request may wait
    assert viewer.connection.state == ConnectionState.DISCONNECTED

    servers.append(EmbeddedServer(model_repository(), **remote_ports))
    harness.run(_start(servers[1]))
    ready = time.monotonic()
    harness.run(until(lambda: viewer.connection.state == ConnectionState.CONNECTED, what="reconnected"))
    print(f"\nreconnected {time.monotonic() - ready:.2f} s after the server was ready")
    # A new session: new channels, the model read again from the restarted server.
    assert viewer.connection.session is not first_session
    assert viewer.connection.session is not None and viewer.connection.session.info is not None
    assert viewer.window.banner.isHidden()
    assert viewer.window.server_panel.connect_button.text() == "Connect"
    # The live stream feeds the new session and shows frames again.
    shown = viewer.live.meter.shown
    harness.run(until(lambda: viewer.live.meter.shown >= shown + 5, what="live frames after the outage"))
    # And a batch runs without a single failure.
    batch_ok(harness, viewer, image_folder(tmp_path / "batch", 6, data.astronaut()), 6)


def test_killed_embedded_server_is_restarted_then_the_limit_offers_reconnect(
    harness: Harness, tmp_path: Path
) -> None:
    viewer = harness.viewer(None)
    harness.run(until(lambda: viewer.connection.state == ConnectionState.CONNECTED, 180, "connected"))
    first = viewer.connection.server
    assert first is not None and first.pid is not None

    killed = time.monotonic()
    os.killpg(first.pid, signal.SIGKILL)  # the whole group: server and backend stubs
    harness.run(
        until(
            lambda: (
                viewer.connection.server is not first and viewer.connection.state == ConnectionState.CONNECTED
            ),
            180,
            "restarted",
        )
    )
    print(f"\nconnected to a restarted local server {time.monotonic() - killed:.2f} s after the kill")
    second = viewer.connection.server
    assert second is not None and second.running and second.pid != first.pid
    batch_ok(harness, viewer, image_folder(tmp_path / "batch", 3, data.astronaut()), 3)

    # Over the limit: not restarted again; the user is told and offered Reconnect.
    budget = viewer.connection.restart_budget
    while budget.take():  # what is left of it, spent
        pass
    assert second.pid is not None
    os.killpg(second.pid, signal.SIGKILL)
    harness.run(until(lambda: viewer.connection.state == ConnectionState.FAILED, 60, "given up"))
    assert "not restarted any more" in viewer.window.banner.text()
    assert viewer.window.server_panel.connect_button.text() == "Reconnect"
    assert viewer.connection.server is second  # nothing new was started

    viewer.window.server_panel.connect_button.click()
    harness.run(until(lambda: viewer.connection.state == ConnectionState.CONNECTED, 180, "reconnected"))
    assert viewer.connection.server is not second and viewer.connection.server is not None
    batch_ok(harness, viewer, image_folder(tmp_path / "again", 2, data.astronaut()), 2)
