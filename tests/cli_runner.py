"""The command line run inside the test's process: `app.cli.main(argv)` with its output
captured, for the tests that look only at what a command prints and the status it returns.

Why: a new `python -m app` costs an interpreter start and the imports (tritonclient, gRPC,
NumPy, OpenCV: ~0.6 s of CPU each time), and about a hundred CLI runs in the suite paid it.
Tests of what only a process shows keep a subprocess: signals and the status the shell sees,
the lazy Qt import, a process killed or limited (tests/integration/procs.py, write_failures.py).
In-process the run is also stricter: a warning in the app's code fails the test (pytest's
`filterwarnings = error`), and an exception it lets through fails it with its traceback.
"""

from __future__ import annotations

import contextlib
import io
import subprocess

from app import cli


def run_cli_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m app ARGS` as a finished process: its status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(args))
        except SystemExit as e:  # argparse's usage errors (2, message already on stderr)
            if isinstance(e.code, str):  # as the interpreter does: the message, status 1
                print(e.code, file=err)
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return subprocess.CompletedProcess(["python", "-m", "app", *args], status, out.getvalue(), err.getvalue())
