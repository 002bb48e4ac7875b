"""SIGTERM and SIGHUP take the Ctrl-C path: a command's clean-up and summary run for them too.

Without this, SIGTERM (a service manager, `kill`) or SIGHUP (its terminal closed) ends
Python at once: no `finally`, no summary, no orderly stop of the server it owns.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGHUP; `except KeyboardInterrupt` catches it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def termination_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main
    thread, as SIGINT raises KeyboardInterrupt. Like a second Ctrl-C, a second signal
    interrupts the clean-up. Nests; does nothing outside the main thread (where Python cannot
    install handlers) and leaves an ignored signal ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # A signal ignored by whoever started us (`nohup`) stays ignored, as Python does for SIGINT.
    wanted = [s for s in TERMINATION_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _raise_terminated) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
