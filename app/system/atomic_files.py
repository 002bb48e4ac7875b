"""Files written whole or not at all: every export, report and recording of the app goes
through here (the command line and the viewer alike).

- `replacing(path)`: write into a temporary file beside `path`, renamed over it only once
  everything was written. A failure (a full disk, a file too large, an interrupted run)
  leaves any previous file as it was and no 0-byte or partial file behind.
- `write_whole(path, data)`: the same for text or bytes made in memory (a PNG encoded first).
- `LineFile`: JSON Lines streamed record by record (a run's records cost inference time: what
  was written is kept). A write that fails cuts the file back to its last whole line; the
  file is renamed into place when it is closed, holding `lines` whole lines.
- `check_writable(folder)`: before a long run, whether a file can be made there at all.

The temporary file is in the same folder (a rename within one file system is atomic) and
named `<name>.<random>.part`. A new file gets the usual permissions (umask), unlike mkstemp's
0600; a file that replaces another keeps that one's permission bits (a 0600 file stays 0600),
set before anything is written, so the new contents are never more open than the old.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike[str]
PART_SUFFIX = ".part"


def temporary_name(path: PathLike) -> str:
    """`<path>.<8 hex>.part`: beside `path`, unique, never matched by `*.json` and the like."""
    return f"{os.fspath(path)}.{uuid.uuid4().hex[:8]}{PART_SUFFIX}"


def describe_write_error(path: PathLike, error: BaseException) -> str:
    """ "cannot write out.json: No space left on device" (the OS's words, not the temporary name)."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return f"cannot write {os.fspath(path)}: {reason}"


def _naming(error: OSError, target: str) -> OSError:
    """The same error (same errno, same subclass) naming the file the user asked for rather
    than its temporary name."""
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror or str(error), target)


def _existing_mode(target: str) -> int | None:
    """The permission bits of the file `target` names now (None: no such file, or not one)."""
    try:
        st = os.stat(target)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _create_part(tmp: str, target: str) -> int:
    """The temporary file, created (exclusive) with `target`'s permissions when it replaces a
    file, else with the umask's; an open descriptor for writing."""
    mode = _existing_mode(target)
    # 0600 until its mode is set: the new contents are never readable by more than the old.
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666 if mode is None else 0o600)
    if mode is not None:
        try:
            os.fchmod(fd, mode)
        except OSError:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
    return fd


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def replacing(path: PathLike, *, binary: bool = False, newline: str | None = None) -> Iterator[IO[Any]]:
    """A file to write `path`'s new contents into (text in UTF-8, or bytes): renamed over
    `path` when the block ends normally; removed, leaving `path` untouched, otherwise."""
    target = os.fspath(path)
    tmp = temporary_name(target)
    try:
        fd = _create_part(tmp, target)
        if binary:
            with open(fd, "wb") as f:
                yield f
        else:
            with open(fd, "w", encoding="utf-8", newline=newline) as f:
                yield f
        # close() above flushed: a full disk raised there, before anything was replaced.
        os.replace(tmp, target)
    except OSError as e:
        _unlink_quietly(tmp)
        raise _naming(e, target) from e
    except BaseException:
        _unlink_quietly(tmp)
        raise


def write_whole(path: PathLike, data: str | bytes) -> None:
    """`path` holds `data` (text as UTF-8) or is left as it was (OSError)."""
    if isinstance(data, bytes):
        with replacing(path, binary=True) as f:
            f.write(data)
    else:
        with replacing(path) as f:
            f.write(data)


def check_writable(folder: PathLike, *, create: bool = False) -> None:
    """OSError (with the OS's reason) unless a file can be created in `folder` now; `create`:
    make the folder (and its parents) first. Nothing is left behind."""
    where = Path(folder)
    if create:
        where.mkdir(parents=True, exist_ok=True)
    elif not where.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder", os.fspath(where))
    probe = temporary_name(where / ".write-check")
    fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    os.unlink(probe)


class LineFile:
    """Whole lines streamed to `path` (any thread holding the caller's lock; one writer).

    The lines go to a temporary file beside `path` as they come, unbuffered (each line is
    on disk as soon as `write` returns). `write` raises OSError when a line cannot be written
    whole, after cutting the file back to the line before: the file never ends inside a
    record. `close()` renames it over `path` (with whatever whole lines it holds) and is
    idempotent; `discard()` removes it instead.
    """

    def __init__(self, path: PathLike, encoding: str = "utf-8") -> None:
        self.path = Path(path)
        self.encoding = encoding
        self.lines = 0
        self._size = 0  # bytes of whole lines
        self._tmp = temporary_name(self.path)
        # Unbuffered: a failed write is seen at once, and nothing waits in a buffer that a
        # later close() would try (and fail) to write again.
        try:
            fd = _create_part(self._tmp, str(self.path))
            self._file: IO[bytes] | None = open(fd, "wb", buffering=0)  # noqa: SIM115 (closed by close())
        except OSError as e:
            raise _naming(e, str(self.path)) from e

    @property
    def closed(self) -> bool:
        return self._file is None

    def write(self, line: str) -> None:
        if self._file is None:
            raise ValueError(f"{self.path} is closed")
        data = memoryview(line.encode(self.encoding))
        written = 0
        try:
            while written < len(data):
                written += self._file.write(data[written:]) or 0
        except OSError as e:
            self._cut_back()
            raise _naming(e, str(self.path)) from e
        self._size += written
        self.lines += line.count("\n")

    def flush(self) -> None:
        """Nothing is buffered (TextIO's protocol)."""

    def _cut_back(self) -> None:
        # Cutting a file shorter needs no space: it works on a full disk too.
        assert self._file is not None
        with contextlib.suppress(OSError):
            os.ftruncate(self._file.fileno(), self._size)
            self._file.seek(self._size)  # a later line continues here, not after a hole

    def close(self) -> None:
        """Rename it into place (`lines` whole lines); idempotent. OSError when even that fails
        (the temporary file is then removed)."""
        f, self._file = self._file, None
        if f is None:
            return
        try:
            f.close()
            os.replace(self._tmp, self.path)
        except OSError as e:
            _unlink_quietly(self._tmp)
            raise _naming(e, str(self.path)) from e

    def discard(self) -> None:
        """Remove it: `path` stays as it was (idempotent)."""
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
            _unlink_quietly(self._tmp)

    def __enter__(self) -> LineFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
