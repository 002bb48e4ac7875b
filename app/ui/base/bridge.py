"""The one way work reaches the GUI thread from worker threads (session workers, feeding and
capture threads): `bridge.wrap(fn)` gives a function any thread may call; `fn` then runs
on the GUI thread, in call order. Each job hands its own callback: no routing by type."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal


class GuiBridge(QObject):
    """Must be created on the GUI thread: a signal emitted from a plain Python thread is then
    queued to this object's (the GUI) thread. After `close()` nothing more is delivered, so
    nothing arriving after the window closed can touch a deleted widget."""

    _call = Signal(object, object)  # fn, args
    _timed_call = Signal(object, object)  # fn, (args, when it was posted: monotonic s)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._closed = False
        # While `timed` (request tracing is on: the X-ray's "hand-over to the GUI" stage),
        # each call carries when its thread posted it, and `posted_s` says so while the call
        # is delivered (None otherwise). Off, a call costs what it always did.
        self.timed = False
        self.posted_s: float | None = None
        # Queued explicitly: even a call made on the GUI thread itself (e.g. a request
        # cancelled from a slot) is delivered later, never re-entrantly. Both signals queue
        # onto this object's one event queue: the call order holds across them.
        self._call.connect(self._run, Qt.ConnectionType.QueuedConnection)
        self._timed_call.connect(self._run_timed, Qt.ConnectionType.QueuedConnection)

    def wrap(self, fn: Callable[..., None]) -> Callable[..., None]:
        """`fn` made callable from any thread (never raises)."""
        return lambda *args: self.post(fn, *args)

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                if self.timed:
                    self._timed_call.emit(fn, (args, time.monotonic()))
                else:
                    self._call.emit(fn, args)
            except RuntimeError:  # the C++ object is gone (interpreter shutting down)
                self._closed = True

    def _run(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        if not self._closed:  # calls queued before close() are dropped too
            fn(*args)

    def _run_timed(self, fn: Callable[..., None], call: tuple[tuple[Any, ...], float]) -> None:
        if self._closed:
            return
        args, posted_s = call
        outer, self.posted_s = self.posted_s, posted_s  # (a nested event loop delivers inside)
        try:
            fn(*args)
        finally:
            self.posted_s = outer

    def close(self) -> None:
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed
