"""What a process group is doing, read from /proc (for the server tests)."""

from __future__ import annotations

import os
from pathlib import Path

from app.server.process_group import live_members as group_members

__all__ = ["group_members", "listening_addresses"]


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
