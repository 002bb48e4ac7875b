"""Reading /proc: a process's stat fields, the running pids."""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat from field 3 on (state, ppid, pgrp, ...; index i is field i + 3),
    None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # Split after the ")" that closes the command name, which may hold spaces or ")".
    return stat.rsplit(")", 1)[1].split()


def running_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
