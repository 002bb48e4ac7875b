"""System shared-memory regions for Triton, made with the OS's own calls (no resource tracker).

Why not `tritonclient.utils.shared_memory`: in 2.73 it is `multiprocessing.shared_memory`,
whose resource tracker process warns about (and may unlink) regions at exit and must be
re-spawned through `sys.executable` in a frozen app. A region here is a file in /dev/shm,
mapped once; Triton opens the same file with `shm_open(key)`.

Names carry the owner's pid and process start time (`tviewer-c<pid>-<start>-<n>`), so the
regions of a process that died can be told from a live one's and removed at the next start.
"""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import threading
from pathlib import Path

import numpy as np

from app.system.leftovers import owned_name, remove_dead_owners

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
