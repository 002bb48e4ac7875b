"""Live capture (camera, stream URL, or a video file played as if live) keeping only the newest frame."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from app.sources._source_spec import (
    CaptureLike,
    SourceSpec,
    describe_source,
    open_capture,
    open_failure_reason,
)
from app.sources.frame import Frame
from app.sources.grabs import Grab, is_jpeg_packet, read_packets
from app.sources.rate import RateMeter
from app.sources.stream_sizes import StreamSizes

log = logging.getLogger(__name__)

# A camera or stream whose read() keeps failing this many times in a row, or for this long
# (a network read can itself take seconds to time out), is gone.
MAX_CONSECUTIVE_FAILURES = 10
MAX_FAILURE_SECONDS = 1.0
RETRY_DELAY_S = 0.05
FALLBACK_FPS = 30.0

Opener = Callable[[SourceSpec, "tuple[int, int] | None"], CaptureLike]


@dataclass(frozen=True)
class CaptureStats:
    fps: float  # rolling capture rate over the last second
    captured: int  # frames read from the source
    dropped: int  # frames replaced by a newer one before latest() took them
    source_fps: float  # nominal rate of the source (0.0 if unknown)


class LiveCapture:
    """Read a live source continuously on its own thread; consumers only ever see the newest frame.

    Consumers poll `latest(after_index)` and/or receive `on_frame(frame)` on the
    capture thread (which must only hand the frame off). `on_error(message)` and
    `on_end()` are also called on the capture thread, at most once, and the thread
    then ends. The capture is opened and released on the capture thread.

    With `on_grab(grab)` instead, frames are not decoded here: the consumer decodes the ones
    it takes (`Grab.decode`, at the size it needs) during that call, on the capture thread,
    and `latest()`/`on_frame` see nothing. A frame nobody takes costs a packet copy (MJPG) or
    the codec's own decoding, never the conversion to pixels.
    """

    def __init__(
        self,
        source: int | str | Path,
        *,
        on_frame: Callable[[Frame], None] | None = None,
        on_grab: Callable[[Grab], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        on_end: Callable[[], None] | None = None,
        resolution: tuple[int, int] | None = None,
        realtime: bool = True,
        loop: bool = False,
        opener: Opener | None = None,
    ) -> None:
        self.spec = describe_source(source)
        self._on_frame = on_frame
        self._on_grab = on_grab
        self._on_error = on_error
        self._on_end = on_end
        self._resolution = resolution
        self._realtime = realtime
        self._loop = loop
        self._opener: Opener = opener or open_capture
        self._stop = threading.Event()
        self._running = threading.Event()  # set = not paused
        self._running.set()
        # One lock for the newest-frame slot and the counters read by other threads.
        self._lock = threading.Lock()
        self._latest: Frame | None = None
        self._latest_taken = True
        self._pulled = False  # has any consumer ever called latest()?
        self._captured = 0
        self._dropped = 0
        self._source_fps = 0.0
        self._rate = RateMeter()
        self._thread: threading.Thread | None = None
        self._error: str | None = None
        self._stale: str | None = None  # why a decoded frame was not the frame (a size change)
        self._ended = False

    # ----- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the capture thread and return at once (opening happens on that thread)."""
        if self._thread is not None:
            raise RuntimeError(f"{self.spec.label}: capture already started")
        # Not a daemon: it holds a device handle that must be released; stop() joins it.
        self._thread = threading.Thread(target=self._run, name=f"LiveCapture[{self.spec.name}]", daemon=False)
        self._thread.start()

    def pause(self) -> None:
        """Stop delivering frames (files hold their position; cameras keep draining the driver)."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def set_loop(self, on: bool) -> None:
        """Files: start again at the end (or not), from the next end on. The capture thread
        reads the flag when it reaches the end (one attribute: no lock needed)."""
        self._loop = bool(on)

    def stop(self, timeout: float = 2.0) -> bool:
        """Ask the thread to end and wait up to `timeout` s; True if it has ended (idempotent).

        False means the backend is stuck inside read(); the thread will release the
        capture and end as soon as read() returns.
        """
        self._stop.set()
        self._running.set()  # wake a paused thread so it sees the stop flag
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return thread is None  # called from a callback: the thread ends right after it
        thread.join(timeout)
        if thread.is_alive():
            log.warning("%s: capture thread still blocked after %.1f s", self.spec.label, timeout)
            return False
        return True

    @property
    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def ended(self) -> bool:
        return self._ended

    def __enter__(self) -> LiveCapture:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- consumer side ---------------------------------------------------------------

    def latest(self, after_index: int = -1) -> Frame | None:
        """The newest frame if its index is greater than after_index, else None (never blocks)."""
        with self._lock:
            self._pulled = True
            frame = self._latest
            if frame is None or frame.index <= after_index:
                return None
            self._latest_taken = True
            return frame

    def stats(self) -> CaptureStats:
        with self._lock:
            captured, dropped, source_fps = self._captured, self._dropped, self._source_fps
        return CaptureStats(self._rate.rate(time.monotonic()), captured, dropped, source_fps)

    # ----- capture thread --------------------------------------------------------------

    def _run(self) -> None:
        cap: CaptureLike | None = None
        try:
            cap = self._opener(self.spec, self._resolution)
            if self._stop.is_set():
                return
            if not cap.isOpened():
                self._fail(f"cannot open {self.spec.label}: {open_failure_reason(self.spec)}")
                return
            self._capture_loop(cap)
        except Exception as exc:  # a backend exception must not kill the thread silently
            log.exception("%s: capture failed", self.spec.label)
            self._fail(f"{self.spec.label}: capture failed: {exc}")
        finally:
            if cap is not None:
                cap.release()  # here, on the thread that read: never concurrently with read()

    def _capture_loop(self, cap: CaptureLike) -> None:
        is_file = self.spec.kind == "file"
        packets = read_packets(cap, self.spec)  # MJPG: JPEGs, decoded only when taken
        fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        with self._lock:
            self._source_fps = fps if fps > 0 else 0.0
        pace = 1.0 / (fps if fps > 0 else FALLBACK_FPS) if (is_file and self._realtime) else 0.0
        next_due = time.monotonic()
        # A file's own frame sizes, read alongside: after a size change OpenCV hands back its
        # last picture for every frame (see app.sources.stream_sizes); the stream then stops
        # with the cause named instead of showing (and inferring) a stale picture as new.
        sizes: list[StreamSizes | None] = [self._stream_sizes(cap) if is_file else None]
        try:
            self._read_frames(cap, is_file, packets, pace, next_due, sizes)
        finally:
            if sizes[0] is not None:
                sizes[0].close()

    def _stream_sizes(self, cap: CaptureLike) -> StreamSizes | None:
        fourcc = int(cap.get(cv2.CAP_PROP_FOURCC) or 0)
        codec = fourcc.to_bytes(4, "little").decode("latin-1").strip("\x00 ").upper()
        return StreamSizes.watch(str(self.spec.value), codec)

    def _read_frames(
        self,
        cap: CaptureLike,
        is_file: bool,
        packets: bool,
        pace: float,
        next_due: float,
        watch: list[StreamSizes | None],
    ) -> None:
        """The capture loop; `watch[0]`: the file's frame sizes (renewed when a loop restarts)."""
        failures = 0
        first_failure = 0.0
        frames_this_pass = 0
        while not self._stop.is_set():
            if not self._running.is_set():
                if is_file:
                    self._running.wait(0.1)
                    next_due = time.monotonic()
                elif not cap.grab():  # keep draining the driver so resume shows a fresh frame
                    self._stop.wait(RETRY_DELAY_S)
                continue
            if pace:
                delay = next_due - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    break
                # Fell more than a frame behind (slow decode, pause): restart the schedule.
                next_due = max(next_due + pace, time.monotonic() - pace)
            check = self._size_check(watch[0], frames_this_pass)
            grab = self._grab(cap, is_file, packets, check) if cap.grab() else None
            if grab is not None:
                failures = 0
                frames_this_pass += 1
                self._publish(grab)
                if self._stale is not None:  # a decoded frame was OpenCV's last picture again
                    self._fail(self._stale)
                    return
                continue
            if is_file:
                if self._loop and frames_this_pass > 0 and cap.set(cv2.CAP_PROP_POS_FRAMES, 0):
                    frames_this_pass = 0
                    if pace:  # the end of the file took no frame's slot: the first frame gets it
                        next_due -= pace
                    if watch[0] is not None:  # the packets from the start again
                        watch[0].close()
                        watch[0] = self._stream_sizes(cap)
                    continue
                if self._captured == 0:
                    self._fail(f"cannot read {self.spec.label}: it contains no decodable frame")
                else:
                    self._finish()
                return
            failures += 1
            if failures == 1:
                first_failure = time.monotonic()
            if (
                failures >= MAX_CONSECUTIVE_FAILURES
                or time.monotonic() - first_failure >= MAX_FAILURE_SECONDS
            ):
                if self._captured:
                    self._fail(f"{self.spec.label} stopped delivering frames")
                else:
                    self._fail(f"{self.spec.label} opened but delivered no frames")
                return
            self._stop.wait(RETRY_DELAY_S)

    def _size_check(self, sizes: StreamSizes | None, frame: int) -> Callable[[np.ndarray], bool] | None:
        """Whether a decoded picture has the size the file's bitstream announces for `frame`
        (None: nothing to check, the size has not changed)."""
        if sizes is None:
            return None
        announced = sizes.size_at(frame)
        if announced is None or announced == sizes.first:
            return None

        def check(bgr: np.ndarray) -> bool:
            if sorted((bgr.shape[1], bgr.shape[0])) == sorted(announced):
                return True
            (w0, h0), (w1, h1) = sizes.first or (0, 0), sizes.current or (0, 0)
            self._stale = (
                f"{self.spec.label}: the video's frame size changes from {w0} x {h0} to {w1} x {h1} "
                f"at frame {frame}; OpenCV's decoder keeps the first size and cannot decode the rest"
            )
            return False

        return check

    def _grab(
        self,
        cap: CaptureLike,
        is_file: bool,
        packets: bool,
        check: Callable[[np.ndarray], bool] | None = None,
    ) -> Grab | None:
        """The frame just grabbed, not decoded (None: its packet could not be read). `check`:
        whether a decoded picture is the frame's own (a JPEG packet always is)."""
        now = time.monotonic()
        pts = float(cap.get(cv2.CAP_PROP_POS_MSEC)) if is_file else None
        with self._lock:
            index = self._captured
        if packets:
            ok, data = cap.retrieve()  # a copy of the packet: cheap, and valid after the next grab
            if not ok or data is None:
                return None
            if is_jpeg_packet(data):
                return Grab(index, self.spec.name, now, pts, packet=data)
            return Grab(index, self.spec.name, now, pts, retrieve=lambda: data)  # a picture after all

        def retrieve() -> np.ndarray | None:
            ok, picture = cap.retrieve()  # the conversion to pixels, only for frames taken
            if not ok or picture is None or (check is not None and not check(picture)):
                return None
            return picture

        return Grab(index, self.spec.name, now, pts, retrieve=retrieve)

    def _publish(self, grab: Grab) -> None:
        if self._on_grab is not None:
            with self._lock:
                self._captured = grab.index + 1
            self._rate.tick(grab.timestamp)
            try:
                self._on_grab(grab)
            except Exception:
                log.exception("%s: on_grab callback raised", self.spec.label)
            finally:
                grab.expire()
            return
        frame = grab.decode()
        grab.expire()
        if frame is None:
            log.warning("%s: frame %d does not decode; skipped", self.spec.label, grab.index)
            with self._lock:
                self._captured = grab.index + 1
            return
        with self._lock:
            # Before anyone pulls, on_frame is the consumer and nothing counts as dropped.
            if self._latest is not None and not self._latest_taken and self._pulled:
                self._dropped += 1
            self._latest = frame
            self._latest_taken = False
            self._captured = grab.index + 1
        self._rate.tick(grab.timestamp)
        if self._on_frame is not None:
            try:
                self._on_frame(frame)
            except Exception:
                log.exception("%s: on_frame callback raised", self.spec.label)

    def _fail(self, message: str) -> None:
        self._error = message
        log.warning(message)
        if self._on_error is not None:
            try:
                self._on_error(message)
            except Exception:
                log.exception("%s: on_error callback raised", self.spec.label)

    def _finish(self) -> None:
        self._ended = True
        if self._on_end is not None:
            try:
                self._on_end()
            except Exception:
                log.exception("%s: on_end callback raised", self.spec.label)
