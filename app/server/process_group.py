"""Stop a whole process group (the server and the Python-backend stubs it forked)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from app.system.proc import running_pids, stat_fields


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies waiting for a reaper do not count)."""
    members = []
    for pid in running_pids():
        fields = stat_fields(pid)
        if fields is not None and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(pid)
    return members


def stop_group(proc: subprocess.Popen[bytes], grace_s: float, settle_s: float = 2.0) -> None:
    """SIGINT the group, give it `grace_s` to exit, SIGKILL whatever is left, and wait (at most
    `settle_s`) until no member runs. `grace_s` 0 kills at once."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    if grace_s > 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    proc.wait()
    wait_until_gone(pgid, settle_s)


def wait_until_gone(pgid: int, settle_s: float = 2.0) -> bool:
    """Wait (at most `settle_s`) until no member of the group runs; True if none does."""
    deadline = time.monotonic() + settle_s
    while live_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
