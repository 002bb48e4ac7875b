"""The server's process group dies with its owner, however the owner ends.

Why a pipe: the kernel closes every descriptor of a process that ends (exit, crash, SIGKILL,
SIGHUP alike), so a pipe whose write end only the owner holds reads end-of-file exactly when
the owner is gone. PR_SET_PDEATHSIG is no substitute: it fires when the *thread* that forked
exits (the viewer starts its server on an executor thread), not the process.

The watcher is a background subshell of /bin/sh inside the server's process group:

    sh -c 'exec 3<&0 </dev/null; (read _ <&3; kill -KILL 0) & exec "$@" 3<&-' tritonserver ...

- sh gets the pipe's read end as stdin and moves it to fd 3 (the stdin of an asynchronous
  list is /dev/null otherwise);
- the subshell blocks in `read` until end-of-file, then SIGKILLs its whole process group:
  the server and the Python-backend stubs it forked;
- `exec` turns sh into tritonserver: same pid, still the group leader, without fd 3.
The subshell ignores SIGINT (POSIX: asynchronous lists of a non-interactive shell), so a
graceful stop of the group is not cut short; it ends with the group's final SIGKILL, or
when the owner closes its end.

A child the owner forks *without* exec (os.fork, multiprocessing's "fork") inherits the
write end and keeps the server alive as long as it runs; subprocess children do not (the
write end is not inheritable).
"""

from __future__ import annotations

import contextlib
import os

SHELL = "/bin/sh"
_WATCH_THEN_EXEC = 'exec 3<&0 </dev/null; (read _ <&3; kill -KILL 0) & exec "$@" 3<&-'


class Lifeline:
    """One pipe per server process: pass `child_stdin` as the child's stdin, run `command()`,
    call `child_started()` once it is spawned, and `cut()` to end the group (idempotent)."""

    def __init__(self) -> None:
        # os.pipe() descriptors are not inheritable: only the child we hand the read end to
        # gets it; the write end stays in this process alone.
        self._read, self._write = os.pipe()

    @property
    def child_stdin(self) -> int:
        return self._read

    @staticmethod
    def command(argv: list[str]) -> list[str]:
        """`argv` run under the watcher: the same pid ends up executing argv[0]."""
        return [SHELL, "-c", _WATCH_THEN_EXEC, argv[0], *argv]

    def child_started(self) -> None:
        """The child holds its copy of the read end now: this process's copy goes."""
        self._read = _close(self._read)

    def cut(self) -> None:
        """Close the owner's end: the watcher SIGKILLs the group (if anything is left of it)."""
        self._read = _close(self._read)
        self._write = _close(self._write)


def _close(fd: int) -> int:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)
    return -1
