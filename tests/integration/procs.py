"""What a process group is doing, read from /proc (for the server tests)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.resources import model_repository
from app.server.embedded import SHM_DIR, SHM_PREFIX, WORKDIR_PREFIX, EmbeddedServer
from app.server.errors import TritonNotFoundError
from app.server.process_group import live_members as group_members
from app.system.proc import running_pids, stat_fields

__all__ = [
    "OwnedByProcess",
    "ended_at_exit",
    "eventually",
    "group_members",
    "listening_addresses",
    "owned_by",
    "start_that_only_sweeps",
]


def eventually(condition: Callable[[], bool], deadline_s: float = 60.0) -> bool:
    """Poll `condition` until it holds or the (generous) deadline passes; its last value.
    The caller asserts the condition, never the time it took."""
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            return condition()
        time.sleep(0.05)
    return True


@dataclass(frozen=True)
class OwnedByProcess:
    """The embedded servers of one owner process: their process groups (found while the
    owner runs: a server whose owner died has another parent), regions and work folders."""

    owner: int
    groups: tuple[int, ...]

    def live_members(self) -> list[int]:
        return [pid for pgid in self.groups for pid in group_members(pgid)]

    def regions(self) -> list[Path]:
        return sorted(SHM_DIR.glob(f"{SHM_PREFIX}{self.owner}-*"))

    def workdirs(self) -> list[Path]:
        return sorted(Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}{self.owner}-*"))


def owned_by(owner: int) -> OwnedByProcess:
    """What `owner` runs now: each child that leads its own process group is a server."""
    groups = []
    for pid in running_pids():
        fields = stat_fields(pid)
        if fields is not None and int(fields[1]) == owner and int(fields[2]) == pid:
            groups.append(pid)
    return OwnedByProcess(owner, tuple(sorted(groups)))


@contextlib.contextmanager
def ended_at_exit(proc: subprocess.Popen[Any]) -> Iterator[list[int]]:
    """A list for the process groups of the servers `proc` owns; at the end of the block,
    `proc` and whatever runs of those groups are killed (a test that failed half-way)."""
    groups: list[int] = []
    try:
        yield groups
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pgid in groups:
            if group_members(pgid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, v6 in (("tcp", False), ("tcp6", True)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            host_hex, port_hex = local.split(":")
            found.append((_address(host_hex, v6), int(port_hex, 16)))
    return found


def _address(host_hex: str, v6: bool) -> str:
    raw = bytes.fromhex(host_hex)
    if not v6:
        return ".".join(str(b) for b in raw[::-1])
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
    full = b"".join(words)
    if full[:12] == b"\x00" * 10 + b"\xff\xff":  # IPv4-mapped
        return ".".join(str(b) for b in full[12:])
    return ":".join(full[i : i + 2].hex() for i in range(0, 16, 2))


def start_that_only_sweeps(tmp_path: Path) -> None:
    """A start as any later viewer or command makes one: it removes dead owners' leftovers,
    then fails (no binary at that path; no server is needed to sweep)."""
    with pytest.raises(TritonNotFoundError):
        EmbeddedServer(model_repository(), tritonserver=tmp_path / "no-tritonserver").start()
