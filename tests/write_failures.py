"""Real write failures for tests, without root: a process whose files may not grow beyond N
bytes (RLIMIT_FSIZE: a write past it fails with EFBIG, as a full disk fails with ENOSPC), and
a folder this process cannot write into.

    python -m tests.write_failures LIMIT_BYTES PROGRAM [ARG...]

runs PROGRAM (exec'd: same pid) with its files limited to LIMIT_BYTES. SIGXFSZ is ignored
first, so the write returns the error instead of killing the process.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def limited_command(limit_bytes: int, argv: Sequence[str]) -> list[str]:
    """`argv` run with files limited to `limit_bytes` each."""
    return [sys.executable, "-m", "tests.write_failures", str(limit_bytes), *argv]


def run_app_limited(limit_bytes: int, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`python -m app ARGS` whose files may not grow beyond `limit_bytes`."""
    return subprocess.run(
        limited_command(limit_bytes, [sys.executable, "-m", "app", *args]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python_limited(limit_bytes: int, code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        limited_command(limit_bytes, [sys.executable, "-c", code]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )


@contextlib.contextmanager
def unwritable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder in which this user cannot create files. Root ignores permission bits, so for
    root a read-only tmpfs is mounted (or, where mounting is not allowed, /sys is used:
    sysfs refuses new files to anyone)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    mounted = (
        shutil.which("mount") is not None
        and (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True
            )
        ).returncode
        == 0
    )
    try:
        yield folder if mounted else Path("/sys")
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], capture_output=True)


def _main(argv: list[str]) -> None:
    limit = int(argv[0])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # kept across exec: EFBIG instead of death
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    os.execv(argv[1], argv[1:])


if __name__ == "__main__":
    _main(sys.argv[1:])
