"""Leftovers of dead owners: real files in /dev/shm and real folders, real (dead, live,
zombie) processes; a live owner's entries are never touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.system.leftovers import dead_owners_names, owned_name, owner_tag, remove_dead_owners, start_time
from tests.integration.procs import eventually

SHM_DIR = Path("/dev/shm")


@pytest.fixture
def prefix() -> Iterator[str]:
    """A prefix of this test alone: whatever it creates in /dev/shm goes at the end."""
    name = f"tviewer-t{uuid.uuid4().hex[:8]}-"
    yield name
    for leftover in SHM_DIR.glob(f"{name}*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)


def dead_owner() -> tuple[int, int]:
    """The pid and start time of a process that ran, ended and was reaped."""
    proc = child()
    started = start_time(proc.pid)
    assert started is not None
    proc.communicate()
    assert start_time(proc.pid) is None
    return proc.pid, started


def region(name: str) -> Path:
    path = SHM_DIR / name
    path.write_bytes(b"\0" * 4096)
    return path


def test_names_carry_this_process_and_are_unique() -> None:
    pid = os.getpid()
    assert owner_tag() == f"{pid}-{start_time(pid)}"
    first, second = owned_name("x-"), owned_name("x-")
    assert first.startswith(f"x-{owner_tag()}-") and second.startswith(f"x-{owner_tag()}-")
    assert first != second


def test_a_dead_owners_regions_go_a_live_ones_stay(prefix: str) -> None:
    pid, started = dead_owner()
    dead = [region(f"{prefix}{pid}-{started}-1_{uuid.uuid4()}") for _ in range(2)]
    mine = region(f"{owned_name(prefix)}_{uuid.uuid4()}")
    # This pid, another start time: the pid of a dead owner, now reused by another process.
    own_start = start_time(os.getpid())
    assert own_start is not None
    reused = region(f"{prefix}{os.getpid()}-{own_start - 1}-1_r")
    unrelated = [region(f"{prefix}notapid"), region(f"{prefix}{pid}")]

    removed = remove_dead_owners(SHM_DIR, prefix)

    assert sorted(removed) == sorted([*dead, reused])
    assert not any(p.exists() for p in [*dead, reused])
    assert mine.exists()
    assert all(p.exists() for p in unrelated)


def test_a_dead_owners_folder_goes_with_its_contents(prefix: str, tmp_path: Path) -> None:
    pid, started = dead_owner()
    dead = tmp_path / f"{prefix}{pid}-{started}-2-abcd1234"
    (dead / "backends" / "python").mkdir(parents=True)
    (dead / "tritonserver.log").write_text("log")
    live = tmp_path / f"{owned_name(prefix)}-efgh5678"
    live.mkdir()
    (live / "tritonserver.log").write_text("log")

    assert remove_dead_owners(tmp_path, prefix) == [dead]
    assert not dead.exists()
    assert (live / "tritonserver.log").read_text() == "log"


def test_a_zombie_owner_is_dead(prefix: str) -> None:
    proc = child()
    started = start_time(proc.pid)
    assert started is not None
    leftover = region(f"{prefix}{proc.pid}-{started}-1_z")
    proc.kill()  # not reaped yet: a zombie, its mappings and descriptors already gone
    try:
        assert eventually(lambda: start_time(proc.pid) is None, deadline_s=30)
        assert Path(f"/proc/{proc.pid}").exists()
        assert remove_dead_owners(SHM_DIR, prefix) == [leftover]
    finally:
        proc.communicate()


def test_another_users_entries_stay(prefix: str) -> None:
    pid, started = dead_owner()
    theirs = region(f"{prefix}{pid}-{started}-1_u")
    other_uid = 65534 if os.geteuid() != 65534 else 65533
    if os.geteuid() == 0:
        os.chown(theirs, other_uid, other_uid)
        assert remove_dead_owners(SHM_DIR, prefix) == []
        assert theirs.exists()
    else:  # a file of another user cannot be made here: the entry of this user goes
        assert remove_dead_owners(SHM_DIR, prefix) == [theirs]


def test_dead_owners_names_are_those_of_ended_owners_only(prefix: str) -> None:
    pid, start = dead_owner()
    dead = f"{prefix}{pid}-{start}-3"
    alive = owned_name(prefix)  # this process
    reused = f"{prefix}{os.getpid()}-{start_time(os.getpid()) or 0}1-2"  # this pid, another start
    names = [dead, alive, reused, "other-program-region", f"{prefix}garbage"]
    assert dead_owners_names(names, prefix, SHM_DIR) == [dead, reused]
    (SHM_DIR / dead).write_bytes(b"")  # its file still there, this user's: still the dead owner's
    assert dead_owners_names([dead], prefix, SHM_DIR) == [dead]
