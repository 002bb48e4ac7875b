"""LocalServer, the embedded server's lifecycle shared by the viewer's connection and the
command line, with the real tritonserver: one start for concurrent callers, a restart after a
crash on the same address within the budget, and a stop that interrupts a start."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import skimage.data

from app.inference.core.open_session import open_session
from app.inference.core.spec import SessionSpec, Timeouts
from app.inference.protocol import parse_endpoints
from app.pipeline.connection.local_server import LocalServer
from app.pipeline.connection.manager import ConnectionManager
from app.pipeline.connection.restart_budget import RestartBudget
from app.pipeline.connection.state import ConnectionState, StateChanged
from tests.conftest import TEST_MODELS
from tests.integration.procs import eventually, group_members
from tests.ui.viewer_fixtures import slow_image

pytestmark = pytest.mark.slow


def test_one_start_for_two_callers_then_a_restart_on_the_same_address_within_the_budget() -> None:
    local = LocalServer(budget=RestartBudget(limit=1), keep_ports=True)
    try:
        urls: list[str] = []
        callers = [threading.Thread(target=lambda: urls.append(local.ensure())) for _ in range(2)]
        for t in callers:
            t.start()
        for t in callers:
            t.join(180)
        assert len(urls) == 2 and urls[0] == urls[1], "the second caller got the server the first started"
        first = local.server
        assert first is not None and first.pid is not None and local.running
        assert local.claim_restart() is None  # it runs: nothing to restart

        os.killpg(first.pid, signal.SIGKILL)
        assert eventually(lambda: local.died)
        assert local.claim_restart() is True
        assert local.ensure() == urls[0]  # the same address: sessions made for it still work
        second = local.server
        assert second is not None and second is not first and second.pid != first.pid
        session = open_session(SessionSpec(endpoints=parse_endpoints(urls[0]), model="face_detector"))
        with session:
            result = session.infer(skimage.data.astronaut())
        assert result.ok and len(result.detections) == 1

        assert second.pid is not None
        os.killpg(second.pid, signal.SIGKILL)
        assert eventually(lambda: local.died)
        assert local.claim_restart() is False  # the budget (1 restart) is spent
        assert not local.running
    finally:
        local.stop()
    assert not local.died  # stopped on purpose


def test_a_stop_during_the_start_leaves_no_server_running() -> None:
    local = LocalServer()
    errors: list[BaseException] = []

    def start() -> None:
        try:
            local.ensure()
        except BaseException as e:
            errors.append(e)

    starter = threading.Thread(target=start)
    starter.start()
    assert eventually(lambda: local.server is not None and local.server.pid is not None)
    server = local.server
    assert server is not None and server.pid is not None
    group = server.pid
    local.stop()
    starter.join(60)
    assert not starter.is_alive()
    assert errors, "ensure() did not report the stop"
    assert eventually(lambda: not group_members(group)), "a process of the server outlived the stop"
    with pytest.raises(Exception, match="stopped"):
        local.ensure()


def test_a_session_in_use_is_kept_across_a_restart_and_its_requests_end_ok(tmp_path: Path) -> None:
    """The viewer's connection with a batch running: the embedded server killed, started again
    on the same address under the batch's session, whose requests retry until their deadlines."""
    repository = tmp_path / "repo"
    repository.mkdir()
    (repository / "slow_faces").symlink_to(TEST_MODELS / "slow_faces", target_is_directory=True)
    said: list[str] = []
    with ThreadPoolExecutor(4) as executor:
        manager = ConnectionManager(
            executor,
            lambda event: said.append(event.detail) if isinstance(event, StateChanged) else None,
            local=LocalServer(repository, keep_ports=True),
            session_in_use=lambda: True,
        )
        try:
            manager.connect_to(SessionSpec(model="slow_faces", timeouts=Timeouts(request_s=120)))
            assert eventually(lambda: manager.state is ConnectionState.CONNECTED, 180), said
            session = manager.session
            assert session is not None
            futures = [session.submit_future(slow_image(300)) for _ in range(24)]  # ~4 s of work
            first = manager.server
            assert first is not None and first.pid is not None
            os.killpg(first.pid, signal.SIGKILL)
            results = [f.result(timeout=300) for f in futures]
            assert eventually(lambda: manager.state is ConnectionState.CONNECTED, 180), said
            assert manager.session is session  # kept, not rebuilt
            assert manager.server is not first
        finally:
            manager.shutdown()
    assert [r.error for r in results if not r.ok] == []
    assert any("the local Triton server stopped; restarting it (1 of 3" in s for s in said), said
    assert any("(local server restarted)" in s for s in said), said
