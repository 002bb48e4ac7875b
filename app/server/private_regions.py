"""The server's shared-memory regions made readable by their user only.

Triton's Python backend makes its regions in /dev/shm (named `<prefix><uuid>`) with mode 0644
whatever the umask: Boost.Interprocess sets the permissions explicitly after creating them.
They hold the inputs' raw pixels, so a thread of the server's owner makes each one 0600 as
it appears: at the models' load, and whenever the backend grows its memory later. Polling
rather than inotify: simple, and self-healing should a chmod land between Boost's creation
and its own chmod.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from app.system.periodic import Periodic

POLL_INTERVAL_S = 0.25
PRIVATE = 0o600


def make_private(folder: Path, prefix: str) -> int:
    """chmod 0600 every file of this user named `<prefix>...` in `folder` that is not yet;
    returns how many were changed."""
    changed = 0
    uid = os.geteuid()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        with contextlib.suppress(OSError):  # gone meanwhile
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid and stat.S_IMODE(info.st_mode) != PRIVATE:
                os.chmod(entry.path, PRIVATE, follow_symlinks=False)
                changed += 1
    return changed


class PrivateRegions:
    """`start()` with the server, `stop()` (idempotent) when it stops."""

    def __init__(self, folder: Path, prefix: str, interval_s: float = POLL_INTERVAL_S) -> None:
        self.folder, self.prefix = folder, prefix
        self._periodic = Periodic(self._step, interval_s, "private-regions")

    def _step(self) -> None:
        make_private(self.folder, self.prefix)

    def start(self) -> PrivateRegions:
        self._periodic.start()
        return self

    def stop(self) -> None:
        self._periodic.stop()
