"""SIGTERM and SIGHUP take the Ctrl-C path: a command's clean-up and summary run for them too.

Without this, SIGTERM (a service manager, `kill`) or SIGHUP (its terminal closed) ends
Python at once: no `finally`, no summary, no orderly stop of the server it owns. And an
interrupt Python dropped (raised inside a finaliser) is delivered again.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

TERMINATION_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
REDELIVERY_DELAY_S = 0.05


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGHUP; `except KeyboardInterrupt` catches it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
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
            again = threading.Timer(REDELIVERY_DELAY_S, _thread.interrupt_main, (signum,))
            again.daemon = True
            again.start()
            return
        previous(unraisable)

    return hook


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
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _redelivering(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for s, handler in previous.items():
            signal.signal(s, handler)
