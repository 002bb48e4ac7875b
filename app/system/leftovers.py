"""Names that carry their owner process, and removal of what dead owners left behind.

A process killed by SIGKILL (or a crash) runs no clean-up: its /dev/shm regions and work
folders stay until someone removes them. Each such name carries the owner's pid and the
owner's start time (field 22 of /proc/<pid>/stat), `<prefix><pid>-<start>-<n>...`, so any
later process can tell a dead owner's leftovers from a live one's; the start time tells a
reused pid from the original owner.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from app.system.proc import stat_fields

_counter = itertools.count(1)


def start_time(pid: int) -> int | None:
    """The start time of a running process (clock ticks since boot), None if it is not running.

    A zombie counts as not running: its descriptors and mappings are gone already.
    """
    fields = stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[22 - 3])  # field 22: starttime


def owner_tag() -> str:
    """`<pid>-<start time>` of this process."""
    pid = os.getpid()
    return f"{pid}-{start_time(pid) or 0}"


def owned_name(prefix: str) -> str:
    """A name unique in this process that carries its owner: `<prefix><pid>-<start>-<n>`."""
    return f"{prefix}{owner_tag()}-{next(_counter)}"


def owner_alive(pid: int, start: int) -> bool:
    return start_time(pid) == start


def sweep_enabled() -> bool:
    """Without a readable /proc every owner would look dead: then nothing is removed."""
    return start_time(os.getpid()) is not None


def owner_of(name: str, prefix: str) -> tuple[int, int] | None:
    """(pid, start time) of the owner a name from owned_name(prefix) carries, None for another name."""
    match = re.match(re.escape(prefix) + r"(\d+)-(\d+)(?!\d)", name)
    return None if match is None else (int(match[1]), int(match[2]))


def dead_owners_leftovers(folder: Path, prefix: str) -> list[Path]:
    """Entries of `folder` named by owned_name(prefix) whose owner no longer runs.

    Only this user's entries: another user's processes may be hidden from /proc.
    """
    if not sweep_enabled():
        return []
    uid = os.geteuid()
    found = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        owner = owner_of(entry.name, prefix)
        if owner is None:
            continue
        try:
            if entry.lstat().st_uid != uid:
                continue
        except OSError:
            continue
        if not owner_alive(*owner):
            found.append(entry)
    return found


def dead_owners_names(names: Iterable[str], prefix: str, folder: Path) -> list[str]:
    """Of `names` (e.g. the shared-memory regions a server has registered), those made by
    owned_name(prefix) whose owner no longer runs. A name whose entry in `folder` still
    exists and belongs to another user is never one of them (that user's processes may be
    hidden from /proc); nor is any name when /proc cannot be read."""
    if not sweep_enabled():
        return []
    uid = os.geteuid()
    found = []
    for name in names:
        owner = owner_of(name, prefix)
        if owner is None or owner_alive(*owner):
            continue
        try:
            if (folder / name).lstat().st_uid != uid:
                continue
        except OSError:
            pass  # its file is gone already (swept, or unlinked at the owner's close)
        found.append(name)
    return found


def remove_dead_owners(folder: Path, prefix: str) -> list[Path]:
    """Remove (files, links, whole folders) what dead owners left under names from
    owned_name(prefix) in `folder`; never a live owner's. Returns what was removed."""
    removed = []
    for entry in dead_owners_leftovers(folder, prefix):
        # Errors ignored: another process may be sweeping the same entry right now.
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
        if not os.path.lexists(entry):
            removed.append(entry)
    return removed
