"""A real server paused mid-run (its whole process group stopped with SIGSTOP for 4 s, then
continued, as a suspended machine or a debugger does): every request ends ok, exactly once.
Attempts that go unanswered are given up after the attempt timeout and sent again; a late
answer of an attempt given up on is dropped. Triton's Python backend often crashes some
seconds after such a pause (its stubs found "not healthy"): the server is supervised, as the
command line's own is, and started again on the same address; the requests of the crash are
retried until their deadline. The 1,500-image figure: tests/bench/bench_pause.py."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec, Timeouts
from app.inference.protocol import parse_endpoints
from app.pipeline.connection.local_server import LocalServer
from app.pipeline.connection.supervisor import ServerSupervisor
from tests.conftest import TEST_MODELS
from tests.integration.session_helpers import Collector, wait_until

pytestmark = pytest.mark.slow

IMAGES = 200
PAUSE_S = 4.0


def test_every_request_ends_ok_once_through_a_pause_of_the_server(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    (repository / "slow_faces").symlink_to(TEST_MODELS / "slow_faces", target_is_directory=True)
    image = np.full((64, 64, 3), 128, np.uint8)
    image[0, 0, 0] = 2  # slow_faces answers after 20 ms: the run lasts long enough to pause it
    collect = Collector()
    events: list[str] = []
    local = LocalServer(repository, keep_ports=True)
    url = local.ensure()
    supervisor = ServerSupervisor(local, events.append).start()
    try:
        server = local.server
        assert server is not None and server.pid is not None
        pgid = server.pid  # started in a session of its own: its pid is the group's id
        spec = SessionSpec(
            endpoints=parse_endpoints(url),
            model="slow_faces",
            timeouts=Timeouts(request_s=60.0),
            limits=Limits(max_in_flight=8),
        )
        with TritonSession(spec).open() as session:
            group = session.group(8)
            resume = threading.Timer(PAUSE_S, os.killpg, (pgid, signal.SIGCONT))
            try:
                for i in range(IMAGES):
                    if i == IMAGES // 4:
                        # Requests in flight, the attempt timeout derived from the answers so far.
                        assert wait_until(lambda: len(collect.results) >= IMAGES // 8, 30)
                        os.killpg(pgid, signal.SIGSTOP)
                        resume.start()  # continued from another thread: this one waits for slots
                    assert group.submit(image, collect, source=f"img_{i:04d}", wait_s=120) is not None
            finally:
                resume.join()
            group.close()
            assert group.wait_drained(120)
            resent = session.stats.snapshot().retried
    finally:
        supervisor.stop()
        local.stop()
    sources = [r.source for r in collect.results]
    assert sorted(sources) == [f"img_{i:04d}" for i in range(IMAGES)], "every image once, none twice"
    not_ok = [(r.source, r.status.value, r.error) for r in collect.results if not r.ok]
    # A str, not a tuple: pytest would cut the events' repr short, and they tell the story.
    assert not not_ok, "\n".join([*(map(str, not_ok[:5])), "events:", *events])
    assert resent >= 1, "the attempts the pause left unanswered were sent again"
