"""System shared-memory regions for Triton, made with the OS's own calls (no resource tracker).

Why not `tritonclient.utils.shared_memory`: in 2.73 it is `multiprocessing.shared_memory`,
whose resource tracker process warns about (and may unlink) regions at exit and must be
re-spawned through `sys.executable` in a frozen app. A region here is a file in /dev/shm,
mapped once; Triton opens the same file with `shm_open(key)`.

Names carry the owner's pid and process start time (`tviewer-c<pid>-<start>-<n>`), so the
regions of a process that died can be told from a live one's and removed at the next start:
their files unlinked here, and their registrations on the server (which keep the server's
own mapping, i.e. the memory, alive) unregistered by name (never "unregister all", which
would take live clients' regions too).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import mmap
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from app.inference.errors import classify_failure
from app.inference.transports.channel import Channel, Headers
from app.system.leftovers import dead_owners_names, owned_name, remove_dead_owners

log = logging.getLogger(__name__)

SHM_DIR = Path("/dev/shm")
PREFIX = "tviewer-c"
_lock = threading.Lock()
# Regions of this process not closed yet: unlinked at exit whatever path the exit takes
# (a session never closed, an interrupted run). A SIGKILL leaves them to the next start.
_open_regions: set[Path] = set()


@atexit.register
def _unlink_at_exit() -> None:
    for path in list(_open_regions):
        with contextlib.suppress(OSError):
            path.unlink()


def remove_dead_owners_regions(folder: Path = SHM_DIR) -> list[Path]:
    """Unlink the client regions whose owner process has ended (a crash, a SIGKILL); never a
    live one's."""
    return remove_dead_owners(folder, PREFIX)


def unregister_dead_owners_regions(
    channels: Iterable[Channel], headers: Headers, timeout_s: float = 5.0, in_use_wait_s: float = 2.0
) -> list[str]:
    """Unregister, on each server, the client regions whose owner process has ended (by the
    name scheme; never a live owner's, never another program's); returns their names. The
    server refuses a region a request still uses (a killed client's last requests may still
    run): those are tried again for up to `in_use_wait_s`, then left to the next start. A
    server that cannot say (an old one, an error) is left as it is."""
    done = []
    for channel in channels:
        try:
            names = channel.system_shm_names(headers=headers, timeout_s=timeout_s)
        except Exception as e:
            log.debug("no shared-memory status from %s: %s", channel.endpoint.url, e)
            continue
        pending = dead_owners_names(names, PREFIX, SHM_DIR)
        give_up = time.monotonic() + in_use_wait_s
        while pending:
            refused = []
            for name in pending:
                try:
                    channel.unregister_system_shm(name, headers=headers)
                except Exception as e:
                    if not classify_failure(e, channel.endpoint).name_unknown:  # not gone meanwhile
                        log.debug("cannot unregister %s on %s: %s", name, channel.endpoint.url, e)
                        refused.append(name)  # still in use by a request
                else:
                    done.append(name)
            if not refused or time.monotonic() >= give_up:
                break
            pending = refused
            time.sleep(0.1)
    if done:
        log.info("unregistered %d shared-memory region(s) of ended clients", len(done))
    return done


class ShmRegion:
    """One region: `name` (also Triton's region name), `key` ("/name" for shm_open), a byte view."""

    def __init__(self, byte_size: int, name: str | None = None) -> None:
        self.name = name or owned_name(PREFIX)
        self.key = f"/{self.name}"
        self.byte_size = max(1, int(byte_size))
        self.path = SHM_DIR / self.name
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, self.byte_size)
            self._map = mmap.mmap(fd, self.byte_size)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        os.close(fd)  # the mapping stays valid without the descriptor
        with _lock:
            _open_regions.add(self.path)

    def write(self, array: np.ndarray, offset: int = 0) -> int:
        """Copy a C-contiguous array in at `offset`; returns its byte size."""
        data = np.ascontiguousarray(array)
        view = np.frombuffer(self._map, np.uint8, data.nbytes, offset)
        view[:] = data.reshape(-1).view(np.uint8)
        return data.nbytes

    def read(self, dtype: np.dtype, shape: tuple[int, ...], offset: int = 0) -> np.ndarray:
        """A copy (the region is reused by the next request) of `shape` values at `offset`."""
        count = int(np.prod(shape)) if shape else 1
        return np.frombuffer(self._map, dtype, count, offset).reshape(shape).copy()

    def clear(self, nbytes: int, offset: int = 0) -> None:
        """Zero `nbytes` at `offset` (an output region before its next use)."""
        view = np.frombuffer(self._map, np.uint8, min(nbytes, self.byte_size - offset), offset)
        view[:] = 0

    def close(self) -> None:
        """Unmap and unlink (idempotent). The server keeps its own mapping until it unregisters."""
        with contextlib.suppress(BufferError, ValueError):
            self._map.close()
        self.path.unlink(missing_ok=True)
        with _lock:
            _open_regions.discard(self.path)
