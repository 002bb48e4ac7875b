"""SIGTERM and SIGHUP take the Ctrl-C path: a command's clean-up and summary run for them too.

Without this, SIGTERM (a service manager, `kill`) or SIGHUP (its terminal closed) ends
Python at once: no `finally`, no summary, no orderly stop of the server it owns. And an
interrupt Python dropped (raised inside a finaliser) is delivered again.

An interrupt (Ctrl-C included) is never raised inside gRPC's or tritonclient's code: gRPC's
Python layer is not safe against an exception landing in the middle of its bookkeeping (a
call registered with the channel but never started), and the channel's `close()` then waits
for that call forever (grpc/grpc#19973; seen here as `infer` hanging at exit after SIGTERM,
2 of ~20 runs). The signal is held and delivered again every 50 ms until the main thread is
back in our code (at most HOLD_AT_MOST_S, for a call that never returns).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
REDELIVERY_DELAY_S = 0.05
HOLD_AT_MOST_S = 5.0
# Client libraries whose Python code an exception must not interrupt (see above).
UNINTERRUPTIBLE_PACKAGES = ("grpc", "tritonclient", "geventhttpclient", "gevent")


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGHUP; `except KeyboardInterrupt` catches it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _redeliver_later(signum: int, first: Callable[[], object] = lambda: None) -> None:
    """The signal again in REDELIVERY_DELAY_S, from a timer thread (`first` run just before).

    A real signal to the main thread: `_thread.interrupt_main` would only set a flag, which a
    main thread blocked on a lock (waiting for room in the window) sees when the lock is
    released, seconds later; a signal wakes it (EINTR)."""
    main = threading.main_thread().ident
    assert main is not None

    def deliver() -> None:
        first()
        signal.pthread_kill(main, signum)

    again = threading.Timer(REDELIVERY_DELAY_S, deliver)
    again.daemon = True
    again.start()


def _package_folders() -> tuple[str, ...]:
    """The folders of the uninterruptible packages imported so far (looked up at each signal:
    they may be imported after the handler was installed)."""
    folders = []
    for name in UNINTERRUPTIBLE_PACKAGES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            folders.append(os.path.dirname(path) + os.sep)
    return tuple(folders)


def inside_client_library(frame: FrameType | None) -> bool:
    """Is any frame of this stack in gRPC's or tritonclient's code? (Cython code has no frame
    of its own: what it calls sits on its Python caller's frame, which is in the package.)"""
    folders = _package_folders()
    while frame is not None and folders:
        if frame.f_code.co_filename.startswith(folders):
            return True
        frame = frame.f_back
    return False


class _Handler:
    """SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP Terminated; each held while the main
    thread is inside a client library (delivered again later, not lost)."""

    def __init__(self) -> None:
        self.held_since: dict[int, float] = {}
        self.pending: set[int] = set()  # held, a redelivery on its way

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if signum in self.pending:  # the same signal again while held: one redelivery is enough
            return
        first = self.held_since.setdefault(signum, time.monotonic())
        if inside_client_library(frame) and time.monotonic() - first < HOLD_AT_MOST_S:
            self.pending.add(signum)
            _redeliver_later(signum, lambda: self.pending.discard(signum))
            return
        del self.held_since[signum]
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)


def _redelivering(previous: Any) -> Any:
    """An unraisable hook that delivers again an interrupt Python had to drop.

    Python runs a signal's handler between any two bytecodes of the main thread, also inside a
    finaliser (gRPC's `_Rendezvous.__del__`, run by the garbage collector), and an exception
    raised there is "ignored": the Ctrl-C would be lost and the command run to its end. The
    hook hands the signal back to the main thread from another thread, so it is raised again
    once the finaliser has returned."""

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt):
            signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
            # Later, and from a timer thread: raised now, it would be dropped again (in the
            # hook, or in the finaliser still on the stack).
            _redeliver_later(signum)
            return
        previous(unraisable)

    return hook


@contextlib.contextmanager
def termination_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main
    thread, as SIGINT raises KeyboardInterrupt, but never inside a client library (above).
    Like a second Ctrl-C, a second signal interrupts the clean-up. Nests; does nothing outside
    the main thread (where Python cannot install handlers) and leaves an ignored signal
    ignored, and a SIGINT handler of someone else's in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # A signal ignored by whoever started us (`nohup`) stays ignored, as Python does for SIGINT.
    wanted = [s for s in TERMINATION_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        wanted.append(signal.SIGINT)
    handler = _Handler()
    previous = {s: signal.signal(s, handler) for s in wanted}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _redelivering(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for s, earlier in previous.items():
            signal.signal(s, earlier)
