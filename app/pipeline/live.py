"""Inference on a live stream: each frame of a source becomes at most one request, with a
small in-flight window per stream so the picture never falls behind the source.

- `LiveJob`: feeds frames to a session. Live mode drops the frames that arrive while the
  stream's window (or the session's) is full, counted; it never blocks the capture thread.
  Frame-by-frame mode (files) waits for a slot instead, so nothing is dropped; `stop()`
  wakes that wait at once.
- `LiveRun`: one play of a source: the capture thread (app.sources.live) feeding a LiveJob.
  When the source ends (or fails) its job is closed, and `on_drained` says when the last
  result was handed on: nobody polls to learn that a file is finished.
Each result carries its own frame in `result.tag` (read it with `frame_of`): boxes are always
drawn on the frame they were computed on.

Frames come from the capture grabbed, not decoded: a frame the window has no room for is
dropped before it costs a decode, and the others are decoded once, at the size a
`DecodePlan` says (the view's and the model's need; full size without a plan or while
recording). A reduced frame's results are reported in the source's pixels.
"""

from __future__ import annotations

import enum
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.inference.core.session import TritonSession
from app.inference.errors import SessionClosedError
from app.inference.profiles.profile import input_side_needed
from app.inference.result import InferenceResult
from app.pipeline.live_decode import DecodePlan
from app.sources.frame import Frame
from app.sources.grabs import FULL, DecodeRequest, Grab
from app.sources.live import CaptureStats, LiveCapture, Opener
from app.sources.rate import RateMeter

log = logging.getLogger(__name__)

ResultCallback = Callable[[InferenceResult], None]


def frame_of(result: InferenceResult) -> Frame:
    """The frame a live result was computed on: `LiveJob` submits every frame as the request's
    tag. TypeError for a result that did not come from a live stream."""
    frame = result.tag
    if not isinstance(frame, Frame):
        raise TypeError(f"result {result.request_id} of {result.source} carries no live frame")
    return frame


@dataclass(frozen=True)
class StreamStats:
    offered: int  # frames the source delivered
    submitted: int
    dropped: int  # frames skipped because the stream's window was full
    completed: int
    in_flight: int
    inference_fps: float  # results per second over the last second


class LiveJob:
    """Feeds one source's frames to a session; `offer()` is cheap and safe on a capture thread."""

    def __init__(
        self,
        session: TritonSession,
        on_result: ResultCallback,
        *,
        max_in_flight: int = 2,
        drop_when_busy: bool = True,
        on_drained: Callable[[], None] | None = None,
    ) -> None:
        self.session = session
        self._on_result = on_result
        self.drop_when_busy = drop_when_busy
        # What is about requests (sent, ended, in flight, drained) is the group's; the job
        # counts only what is about frames (offered, dropped).
        self.group = session.group(max(1, max_in_flight), "live", on_drained)
        # The longest side the model needs of a frame (None: all of it), for the decode size.
        self.model_side = input_side_needed(session.profile)
        # offer() runs on the capture thread, stats() on the GUI: "a stop is not a drop".
        self._lock = threading.Lock()
        # A frame counts as offered once it is submitted or dropped, never while it is decoded
        # or waits for room, so every stats() has submitted + dropped == offered (the job's own
        # submitted count, not the group's: both move under this one lock).
        self._offered = self._submitted = self._dropped = 0
        self._stopped = False
        self._rate = RateMeter()

    @property
    def max_in_flight(self) -> int:
        return self.group.limit

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        self.group.limit = max(1, int(value))  # applies at once

    def has_room(self) -> bool:
        """A frame offered now would be sent (the stream's window has a free place)."""
        return self.group.in_flight < self.group.limit

    def offer(self, frame: Frame | Grab, plan: DecodePlan | None = None) -> bool:
        """Submit the frame if there is room (live) or once there is (frame by frame).
        A grabbed frame is decoded only when it will be sent, at the size `plan` asks for
        (None: full size). Returns whether it was submitted."""
        with self._lock:
            if self._stopped:
                return False
        if isinstance(frame, Grab):
            if self.drop_when_busy and not self.has_room():
                return self._drop()  # never decoded
            request = plan.request(frame.size, self.model_side) if plan is not None else FULL
            decoded = decode(frame, request)
            if decoded is None:
                return self._drop()
            frame = decoded
        try:
            request_id = self.group.submit(
                frame.image,
                self._done,
                source=frame.source,
                frame=frame.index,
                tag=frame,
                block=not self.drop_when_busy,
                source_size=frame.original_size,
            )
        except SessionClosedError:
            request_id = None
        if request_id is not None:
            with self._lock:
                self._offered += 1
                self._submitted += 1
            return True
        return self._drop()

    def drop(self) -> None:
        """A frame offered and dropped without asking (the caller saw there was no room)."""
        with self._lock:
            if self._stopped:
                return
        self._drop()

    def _drop(self) -> bool:
        with self._lock:
            self._offered += 1
            if not self._stopped:  # a stop is not a drop
                self._dropped += 1
        return False

    def _done(self, result: InferenceResult) -> None:
        self._rate.tick(time.monotonic())
        self._on_result(result)

    def stats(self) -> StreamStats:
        with self._lock:
            offered, submitted, dropped = self._offered, self._submitted, self._dropped
        counts = self.group.counts
        return StreamStats(
            offered,
            submitted,
            dropped,
            counts.ended,
            self.group.in_flight,
            self._rate.rate(time.monotonic()),
        )

    def finish(self) -> None:
        """The source has ended: no more frames. What is in flight goes on; drained follows
        its last result."""
        with self._lock:
            self._stopped = True
        self.group.close()

    def stop(self) -> None:
        """No more frames; wake a waiting offer(); cancel this stream's requests in flight
        (each still ends once, as cancelled); drained follows. Returns at once."""
        with self._lock:
            self._stopped = True
        self.group.cancel()
        self.group.close()


_undecodable: dict[str, int] = {}  # per source: frames that did not decode (for the log)


def decode(grab: Grab, request: DecodeRequest) -> Frame | None:
    """The grabbed frame decoded, or None when it does not decode (logged at the 1st, 10th,
    100th... such frame of a source, not 30 times a second)."""
    frame = grab.decode(request)
    if frame is None:
        count = _undecodable[grab.source] = _undecodable.get(grab.source, 0) + 1
        if math.log10(count).is_integer():
            log.warning("%s: frame %d does not decode; not sent (%d so far)", grab.source, grab.index, count)
    return frame


@dataclass
class LiveOptions:
    max_in_flight: int = 2
    frame_by_frame: bool = False  # files only: every frame inferred, nothing dropped (not real time)
    loop: bool = False  # files only: start again at the end
    resolution: tuple[int, int] | None = None  # cameras only; None = the driver's default


class LiveEvent(enum.StrEnum):
    ERROR = "error"
    END = "end"


@dataclass(frozen=True)
class LiveStats:
    capture: CaptureStats
    stream: StreamStats | None


def capture_for(
    source: int | str | Path,
    on_grab: Callable[[Grab], None],
    on_event: Callable[[LiveEvent, str], None],
    options: LiveOptions,
    opener: Opener | None = None,
) -> LiveCapture:
    """The capture thread of one play of `source` with `options`, handing on its frames
    grabbed, not decoded; errors and the end of a file reach `on_event` (LiveRun, and the
    compare's run that feeds two sessions)."""
    return LiveCapture(
        source,
        on_grab=on_grab,
        on_error=lambda message: on_event(LiveEvent.ERROR, message),
        on_end=lambda: on_event(LiveEvent.END, ""),
        resolution=options.resolution,
        realtime=not options.frame_by_frame,
        loop=options.loop,
        opener=opener,
    )


class LiveRun:
    """One play of a source: its capture thread offers every frame to the current LiveJob.

    `on_result` is called on session worker threads, `on_event(event, message)` on the
    capture thread (once: an error, or the end of a file); both must only hand off.
    `on_drained()` is called once after that event, when the last result of the stream
    has been handed on (on the thread that handed it on, or the capture thread when
    nothing was left); it comes after `on_event` and after every result.
    `stop()` blocks for at most about `timeout` s: call it off any GUI thread.
    `decode_plan`: how big frames are decoded (None: full size); its owner may change it
    while the run plays.
    """

    def __init__(
        self,
        source: int | str | Path,
        session: TritonSession,
        on_result: ResultCallback,
        on_event: Callable[[LiveEvent, str], None],
        options: LiveOptions | None = None,
        opener: Opener | None = None,
        on_drained: Callable[[], None] | None = None,
        decode_plan: DecodePlan | None = None,
    ) -> None:
        self.options = options or LiveOptions()
        self.decode_plan = decode_plan
        self._on_result = on_result
        self._on_event = on_event
        self._on_drained = on_drained
        # The capture thread's end and set_session() (another thread) agree on which job ended.
        self._lock = threading.Lock()
        self._ended = False  # the source ended or failed: no frame will come
        self._ended_job: LiveJob | None = None  # the job that end closed
        self._job: LiveJob | None = self._new_job(session)
        self.capture = capture_for(source, self._offer, self._event, self.options, opener)

    def _new_job(self, session: TritonSession) -> LiveJob:
        job = LiveJob(
            session,
            self._on_result,
            max_in_flight=self.options.max_in_flight,
            drop_when_busy=not self.options.frame_by_frame,
            on_drained=lambda: self._job_drained(job),
        )
        return job

    def _event(self, event: LiveEvent, message: str) -> None:
        # The capture thread, once, after its last frame was offered. The event goes first,
        # so drained (maybe at once, here) always follows it.
        self._on_event(event, message)
        with self._lock:
            if self._ended:
                return
            self._ended = True
            job = self._ended_job = self._job
        if job is not None:
            job.finish()
        elif self._on_drained is not None:
            self._on_drained()  # no session: nothing in flight

    def _job_drained(self, job: LiveJob) -> None:
        # Only the job the source's end closed: a job replaced by set_session() (or stopped
        # while the source still plays) drains too, but the stream goes on.
        if job is self._ended_job and self._on_drained is not None:
            self._on_drained()

    def _offer(self, grab: Grab) -> None:
        # The capture thread. Reads the job once: it is replaced atomically by set_session().
        job = self._job
        if job is not None:
            job.offer(grab, self.decode_plan)

    def start(self) -> None:
        """Returns at once: the source is opened on the capture thread."""
        self.capture.start()

    def pause(self) -> None:
        self.capture.pause()

    def resume(self) -> None:
        self.capture.resume()

    @property
    def job(self) -> LiveJob | None:
        return self._job

    def set_loop(self, on: bool) -> None:
        """Applies at once: a file playing starts again at its end (unless it has ended)."""
        self.options.loop = bool(on)
        self.capture.set_loop(on)

    def set_max_in_flight(self, value: int) -> None:
        self.options.max_in_flight = max(1, int(value))
        if self._job is not None:
            self._job.max_in_flight = self.options.max_in_flight

    def set_session(self, session: TritonSession | None) -> LiveJob | None:
        """Feed another session from the next frame on (None: drop frames until one comes).
        Returns the old job, for the caller to stop (it cancels the old session's requests).
        After the source's end no frame will come: the ended job stays (its figures too) and
        is returned to be stopped; drained follows."""
        with self._lock:
            if self._ended:
                return self._job
            old, self._job = self._job, (self._new_job(session) if session is not None else None)
        return old

    def stats(self) -> LiveStats:
        job = self._job
        return LiveStats(self.capture.stats(), job.stats() if job is not None else None)

    def in_flight(self) -> int:
        job = self._job
        return job.group.in_flight if job is not None else 0

    def unfinished(self) -> int:
        """Requests whose result has not been handed on yet."""
        job = self._job
        return job.group.unfinished if job is not None else 0

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop the job first (wakes a capture thread waiting in offer() in frame-by-frame mode),
        then the capture, which releases the device on its own thread. True when it has."""
        job, self._job = self._job, None
        if job is not None:
            job.stop()
        return self.capture.stop(timeout)


class LiveState(enum.StrEnum):
    IDLE = "idle"  # no source chosen
    WAITING = "waiting"  # a source is chosen; it starts once a server is connected
    PLAYING = "playing"
    PAUSED = "paused"
    ENDED = "ended"  # a file played to its end
    FAILED = "failed"  # the source could not be opened or stopped delivering
    STOPPED = "stopped"
