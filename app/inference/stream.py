"""Inference on a live stream: each frame of a source becomes at most one request, with a
small in-flight window per stream so the picture never falls behind the source.

Live mode drops the frames that arrive while the stream's window is full (counted);
frame-by-frame mode (recordings) waits for a slot instead, so nothing is dropped.
Each result carries its own frame in `result.tag`: boxes are always drawn on the frame
they were computed on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.inference.errors import SessionClosedError
from app.inference.result import InferenceResult
from app.inference.session import TritonSession
from app.sources.rate import RateMeter


@dataclass(frozen=True)
class StreamStats:
    offered: int  # frames the source delivered
    submitted: int
    dropped: int  # frames skipped because the stream's window was full
    completed: int
    in_flight: int
    inference_fps: float  # results per second over the last second


class StreamInference:
    """Feeds one source's frames (objects with .index, .image, .source) to a session."""

    def __init__(
        self,
        session: TritonSession,
        on_result: Callable[[InferenceResult], None],
        *,
        max_in_flight: int = 2,
        drop_when_busy: bool = True,
    ) -> None:
        self.session = session
        self._on_result = on_result
        self._max_in_flight = max(1, max_in_flight)
        self.drop_when_busy = drop_when_busy
        # offer() runs on the capture thread, results on session workers, stats on the GUI.
        self._cond = threading.Condition()
        self._in_flight = 0
        self._ids: set[str] = set()  # this stream's requests in flight, for stop()
        self._finished_before_known: set[str] = set()
        self._offered = self._submitted = self._dropped = self._completed = 0
        self._stopped = False
        self._rate = RateMeter()

    @property
    def max_in_flight(self) -> int:
        return self._max_in_flight

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        with self._cond:
            self._max_in_flight = max(1, int(value))
            self._cond.notify_all()

    def offer(self, frame: Any) -> bool:
        """Submit the frame if the stream's window has room (live) or once it has (frame by frame).
        Returns whether it was submitted. Cheap: safe to call on the capture thread."""
        with self._cond:
            if self._stopped:
                return False
            self._offered += 1
            if not self.drop_when_busy:
                self._cond.wait_for(lambda: self._stopped or self._in_flight < self._max_in_flight)
            if self._stopped:
                return False
            if self._in_flight >= self._max_in_flight:
                self._dropped += 1
                return False
            self._in_flight += 1  # taken before submit: the result may arrive before submit returns
        try:
            request_id = self.session.submit(
                frame.image, self._done, source=frame.source, frame=frame.index, tag=frame, block=True
            )
        except SessionClosedError:
            request_id = None
        with self._cond:
            if request_id is None:
                self._in_flight -= 1
                self._cond.notify_all()
                return False
            self._submitted += 1
            if request_id in self._finished_before_known:
                self._finished_before_known.discard(request_id)
            else:
                self._ids.add(request_id)
            return True

    def _done(self, result: InferenceResult) -> None:
        now = time.monotonic()
        with self._cond:
            self._in_flight -= 1
            if result.request_id in self._ids:
                self._ids.discard(result.request_id)
            else:
                self._finished_before_known.add(result.request_id)
            self._completed += 1
            self._cond.notify_all()
        self._rate.tick(now)
        self._on_result(result)

    def stats(self) -> StreamStats:
        with self._cond:
            return StreamStats(
                self._offered,
                self._submitted,
                self._dropped,
                self._completed,
                self._in_flight,
                self._rate.rate(time.monotonic()),
            )

    def stop(self) -> None:
        """No more frames; cancel this stream's requests still in flight (each still ends once)."""
        with self._cond:
            self._stopped = True
            pending = list(self._ids)
            self._cond.notify_all()
        for request_id in pending:
            self.session.cancel(request_id)
