"""Nothing orphaned: the embedded server (tritonserver, its Python-backend stubs) dies with the
process that owns it however that process ends, and the next start removes the /dev/shm
regions and work folder a killed owner could not remove."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.procs import (
    OwnedByProcess,
    ended_at_exit,
    eventually,
    owned_by,
    start_that_only_sweeps,
)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "app", "serve"]
OWNER = [sys.executable, "-m", "tests.integration.owner_process"]


@contextlib.contextmanager
def owner_process(argv: list[str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    """The owner in its own session (a signal to it reaches it alone), and a list where the
    test records its server's group: both are killed if the test fails half-way."""
    with (
        open(tmp_path / "owner.err", "w") as err,
        subprocess.Popen(
            argv,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        ) as proc,
        ended_at_exit(proc) as groups,
    ):
        yield proc, groups


def wait_until_serving(
    proc: subprocess.Popen[str], groups: list[int], ready: str, tmp_path: Path
) -> OwnedByProcess:
    """The owner's server, once it answers: its group (recorded in `groups`) with the lifeline
    watcher in it, the stubs' regions and the work folder, all named after the owner."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(ready), (tmp_path / "owner.err").read_text()[-3000:]
    owned = owned_by(proc.pid)
    groups.extend(owned.groups)
    assert len(owned.groups) == 1, owned
    members = owned.live_members()
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] for pid in members]
    assert b"/bin/sh" in commands, "the lifeline watcher runs in the server's group"
    assert len(members) >= 4, "tritonserver, the watcher and a stub per face_detector instance"
    assert owned.regions(), "the stubs' regions carry the owner's pid"
    assert len(owned.workdirs()) == 1
    return owned


@pytest.mark.parametrize(
    ("argv", "ready", "end"),
    [
        pytest.param(SERVE, "grpc=", signal.SIGKILL, id="serve-SIGKILL"),
        pytest.param([*OWNER, "--from-thread"], "ready", signal.SIGKILL, id="started-from-a-thread-SIGKILL"),
        pytest.param([*OWNER, "--from-thread", "--then", "crash"], "ready", "crash", id="owner-crash"),
        pytest.param(OWNER, "ready", signal.SIGHUP, id="SIGHUP-without-a-handler"),
        pytest.param(OWNER, "ready", "exit", id="exit-without-stop"),
    ],
)
def test_the_server_dies_with_its_owner_and_the_next_start_sweeps(
    argv: list[str], ready: str, end: signal.Signals | str, tmp_path: Path
) -> None:
    with owner_process(argv, tmp_path) as (proc, groups):
        owned = wait_until_serving(proc, groups, ready, tmp_path)
        assert proc.stdin is not None
        if end == "crash":
            proc.stdin.write("crash\n")
            proc.stdin.flush()
            expected_status = -signal.SIGSEGV
        elif end == "exit":
            proc.stdin.close()  # the owner exits at once, without stopping its server
            expected_status = 0
        else:
            assert isinstance(end, signal.Signals)
            proc.send_signal(end)
            expected_status = -end
        assert proc.wait(timeout=60) == expected_status
        assert eventually(lambda: owned.live_members() == []), f"left running: {owned.live_members()}"
        start_that_only_sweeps(tmp_path)
        assert owned.regions() == []
        assert owned.workdirs() == []
