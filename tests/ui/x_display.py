"""A real X display with a real window manager: Xvfb at a given screen size and openbox on it
(title bars and borders, as a user's desktop has), for the window-geometry tests and the
README's screenshots. packaging/system-deps.sh installs both."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator

WM_READY_TIMEOUT_S = 20.0


def _wm_running(env: dict[str, str]) -> bool:
    """A EWMH window manager has announced itself on the root window."""
    done = subprocess.run(
        ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=env, capture_output=True, text=True, check=False
    )
    return done.returncode == 0 and "window id" in done.stdout


@contextlib.contextmanager
def x_display(width: int, height: int) -> Iterator[dict[str, str]]:
    """An environment (DISPLAY set, Qt on xcb) for a new Xvfb screen of `width` x `height`
    with openbox managing its windows; both stop when the block ends."""
    for tool in ("Xvfb", "openbox", "xprop"):
        assert shutil.which(tool), f"{tool} missing: packaging/system-deps.sh installs it (make test)"
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    wm: subprocess.Popen[bytes] | None = None
    try:
        with os.fdopen(read_fd) as announced:
            number = announced.readline().strip()  # written once the server accepts clients
        assert number, "Xvfb did not start"
        env = dict(os.environ, DISPLAY=f":{number}", QT_QPA_PLATFORM="xcb")
        env.pop("WAYLAND_DISPLAY", None)
        wm = subprocess.Popen(
            ["openbox", "--sm-disable"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + WM_READY_TIMEOUT_S
        while not _wm_running(env):
            assert wm.poll() is None, "openbox exited"
            assert time.monotonic() < deadline, "openbox did not start"
            time.sleep(0.1)
        yield env
    finally:
        for process in (wm, server):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
