"""The one way results travel from TritonSession worker threads to the GUI thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal

from app.inference.result import InferenceResult


class ResultBridge(QObject):
    """`post(result)` from any thread; `result_ready(result)` fires on the GUI thread.

    Must be created on the GUI thread: a signal emitted from a plain Python thread is
    then queued to this object's (the GUI) thread. After `close()` results are dropped,
    so nothing arriving after the window closed can touch a deleted widget.
    """

    result_ready = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._closed = False

    def connect_receiver(self, slot: Callable[[InferenceResult], None]) -> None:
        # Queued explicitly: even a result finished on the GUI thread itself (e.g. a
        # request cancelled from a slot) is delivered later, never re-entrantly.
        self.result_ready.connect(slot, Qt.ConnectionType.QueuedConnection)

    def post(self, result: InferenceResult) -> None:
        """The session's callback (worker thread). Never raises."""
        with self._lock:
            if self._closed:
                return
            try:
                self.result_ready.emit(result)
            except RuntimeError:  # the C++ object is gone (interpreter shutting down)
                self._closed = True

    def close(self) -> None:
        """Drop every later result. Pending queued deliveries are dropped too, by the receivers
        checking `closed` (Qt would still deliver them to live receivers)."""
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed
