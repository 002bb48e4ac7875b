"""Process level: the QApplication, the qasync loop, SIGINT/SIGTERM/SIGHUP, and the run until closed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import qasync

# PySide6 before qasync: qasync binds to the first Qt binding it finds.
from PySide6.QtCore import QMessageLogContext, QSocketNotifier, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from app.ui.viewer import Viewer, ViewerOptions

# Short blocking I/O (opening sessions, reading files, probes) plus one worker each for the
# long jobs that may run beside it: a load ramp and a tune hold theirs for minutes.
IO_WORKERS = 6
# Harmless notices of Qt's offscreen/virtual-display platform plugins, not worth a line on stderr.
IGNORED_QT_MESSAGES = ("This plugin does not support propagateSizeHints()",)


def qt_message(kind: QtMsgType, _context: QMessageLogContext, message: str) -> None:
    """Qt's warnings go to stderr as usual, minus the known platform-plugin noise."""
    if message in IGNORED_QT_MESSAGES:
        return
    sys.stderr.write(f"Qt: {message}\n")


@contextlib.contextmanager
def close_on_signals(on_signal: Callable[[], None]) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP (its terminal closed) post a close on the GUI thread.

    Python runs signal handlers only when the interpreter gets control, which it does
    not while Qt waits in C++; the wakeup fd writes a byte to a socket that a
    QSocketNotifier watches, so the GUI thread wakes up and closes cleanly.
    """
    rsock, wsock = socket.socketpair()
    rsock.setblocking(False)
    wsock.setblocking(False)
    old_fd = signal.set_wakeup_fd(wsock.fileno())
    old = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Type.Read)

    def woke() -> None:
        with contextlib.suppress(OSError):
            rsock.recv(64)
        on_signal()

    notifier.activated.connect(woke)
    try:
        yield
    finally:
        notifier.setEnabled(False)
        signal.set_wakeup_fd(old_fd)
        for s, handler in old.items():
            signal.signal(s, handler)
        rsock.close()
        wsock.close()


def run_viewer(options: ViewerOptions) -> int:
    qInstallMessageHandler(qt_message)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    app.setApplicationName("Triton Inference Viewer")
    app.setOrganizationName("triton-viewer")
    # The viewer decides when to quit: after its asynchronous clean-up, not when the
    # last window hides (which would stop the loop with tasks still pending).
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    # Our own pool of plain threads for blocking work (no QThreads: nothing for Qt to
    # warn about at exit); passed explicitly to every run_in_executor.
    executor = ThreadPoolExecutor(IO_WORKERS, thread_name_prefix="viewer-io")
    viewer = Viewer(options, executor)
    try:
        with close_on_signals(viewer.request_close):
            viewer.start()  # shows the window
            loop.run_until_complete(viewer.closed.wait())
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        loop.close()
        asyncio.set_event_loop(None)
    return viewer.exit_code
