"""Record annotated frames to a video file plus one JSON line of detections per frame."""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import cv2
import numpy as np

from app.system.atomic_files import LineFile, describe_write_error

log = logging.getLogger(__name__)

_FOURCC = {".mp4": "mp4v", ".m4v": "mp4v", ".mov": "mp4v", ".avi": "MJPG"}


# (image, detections, extra) -> the picture to record; `extra` holds whatever else the frame
# carries (e.g. semantic masks, top-k classes) and what only the drawing needs (`draw_extra`).
# The image is the recorder's own copy: render may draw into it.
Render = Callable[[np.ndarray, list[Any], dict[str, Any]], np.ndarray]
# (image, detections, frame, timestamp, extra, draw_extra, the image is the recorder's own)
_Item = tuple[np.ndarray, list[Any], int | None, float, dict[str, Any], dict[str, Any], bool]


class Recorder:
    """Write RGB frames to `video_path` and their detections to `jsonl_path`, off the caller's thread.

    `write()` never blocks: frames go into a bounded queue drained by a writer thread,
    which opens both files when the first frame arrives (its size is the video's) and
    applies `render(image, detections)` (e.g. drawing the boxes) before encoding. When
    the queue is full the frame is left out of the recording and counted in `dropped`.
    Each JSONL record carries the source's frame number ("frame", when given), the
    recording's own index ("recording_frame") and the time since the first frame. The JSONL
    file is written beside its name and renamed into place at the end, holding whole records
    only (a full disk stops the recording at the last whole one: `error` says so).
    """

    def __init__(
        self,
        video_path: str | Path,
        jsonl_path: str | Path,
        fps: float,
        *,
        render: Render | None = None,
        queue_size: int = 64,
    ) -> None:
        self.video_path = Path(video_path)
        self.jsonl_path = Path(jsonl_path)
        self.size: tuple[int, int] | None = None  # (width, height) of the first frame
        self._codec = _FOURCC.get(self.video_path.suffix.lower())
        if self._codec is None:
            raise ValueError(f"cannot record to {self.video_path}: use a .mp4, .mov, .m4v or .avi file name")
        if not (fps > 0 and np.isfinite(fps)):
            raise ValueError(f"cannot record to {self.video_path}: invalid frame rate {fps}")
        self.fps = float(fps)
        self._render = render
        self._writer: cv2.VideoWriter | None = None
        self._jsonl: LineFile | None = None
        self._queue: queue.Queue[_Item | None] = queue.Queue(queue_size)
        self._t0: float | None = None
        self._lock = threading.Lock()  # serialises write() against close() and guards the counters
        self._closed = False
        self._written = 0
        self._dropped = 0
        self._error: str | None = None
        # Not a daemon: it owns the open files; close() drains the queue and joins it.
        self._thread = threading.Thread(target=self._run, name=f"Recorder[{self.video_path.name}]")
        self._thread.start()

    @property
    def written(self) -> int:
        return self._written

    @property
    def dropped(self) -> int:
        return self._dropped

    @property
    def error(self) -> str | None:
        """The first disk/codec error, after which nothing more is recorded."""
        return self._error

    def write(
        self,
        image: np.ndarray,
        detections: Sequence[Any] = (),
        timestamp: float | None = None,
        *,
        frame: int | None = None,
        extra: dict[str, Any] | None = None,
        draw_extra: dict[str, Any] | None = None,
        unchanging: bool = False,
    ) -> bool:
        """Queue one RGB frame with its detections; False if it was not queued.

        timestamp: time.monotonic() of the frame (default: now); frame: the source's number;
        extra: more keys for the frame's JSON record (and for `render`); draw_extra: more keys
        for `render` only (e.g. the style the frame is drawn with), not written. unchanging:
        nobody writes into `image` after this call (a live frame): the copy `render` draws
        into is then made on the recorder's thread, not the caller's (a 4K frame is 25 MB).
        """
        now = time.monotonic() if timestamp is None else timestamp
        if not unchanging:
            # Copy: the caller may draw into or reuse this buffer after we return.
            image = np.array(image, dtype=np.uint8, copy=True)
        own = not unchanging
        item = (image, list(detections), frame, now, dict(extra or {}), dict(draw_extra or {}), own)
        with self._lock:
            if self._closed or self._error is not None:
                return False
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                self._dropped += 1
                return False
        return True

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    break
                if self._error is None:
                    self._write_one(*item)
        finally:
            # Released on this thread, the only one that ever touched the files.
            if self._writer is not None:
                self._writer.release()
            if self._jsonl is not None:
                try:
                    self._jsonl.close()
                except OSError as exc:
                    self._error = self._error or describe_write_error(self.jsonl_path, exc)
                    log.error(self._error)

    def _open(self, width: int, height: int) -> None:
        assert self._codec is not None
        self.size = (width, height)
        writer = cv2.VideoWriter(
            str(self.video_path), cv2.VideoWriter.fourcc(*self._codec), self.fps, self.size
        )
        if not writer.isOpened():
            writer.release()
            raise ValueError(
                f"cannot record to {self.video_path}: OpenCV cannot open a {self._codec} writer there"
            )
        try:
            self._jsonl = LineFile(self.jsonl_path)
        except OSError as exc:
            writer.release()
            raise ValueError(f"cannot write {self.jsonl_path}: {exc.strerror or exc}") from exc
        self._writer = writer

    def _write_one(
        self,
        rgb: np.ndarray,
        detections: list[Any],
        frame: int | None,
        timestamp: float,
        extra: dict[str, Any] | None = None,
        draw_extra: dict[str, Any] | None = None,
        own: bool = True,
    ) -> None:
        try:
            if self._writer is None:
                self._open(rgb.shape[1], rgb.shape[0])
                self._t0 = timestamp
            assert self._writer is not None and self._jsonl is not None and self.size is not None
            if self._render is not None:
                if not own:
                    rgb = np.array(rgb, dtype=np.uint8, copy=True)  # render draws into it
                rgb = self._render(rgb, detections, {**(extra or {}), **(draw_extra or {})})
            bgr = cv2.cvtColor(rgb, cv2.COLOR_GRAY2BGR if rgb.ndim == 2 else cv2.COLOR_RGB2BGR)
            if (bgr.shape[1], bgr.shape[0]) != self.size:
                # A writer given another size silently writes nothing: fit the frame instead.
                bgr = cv2.resize(bgr, self.size, interpolation=cv2.INTER_AREA)
            self._writer.write(bgr)
            record = {
                "frame": self._written if frame is None else frame,
                "recording_frame": self._written,
                "timestamp": round(timestamp - (self._t0 or timestamp), 6),
                "detections": detections,
                **(extra or {}),
            }
            try:
                self._jsonl.write(json.dumps(record, default=_jsonable) + "\n")
            except OSError as exc:
                raise ValueError(
                    f"{describe_write_error(self.jsonl_path, exc)}; the recording stopped there "
                    f"({self._jsonl.lines} frame record(s) kept, each a whole line)"
                ) from exc
            self._written += 1
        except Exception as exc:
            self._error = (
                str(exc) if isinstance(exc, ValueError) else f"recording to {self.video_path} failed: {exc}"
            )
            log.error(self._error)

    def close(self, timeout: float | None = None) -> bool:
        """Write what is queued, close both files and join the thread; idempotent. True when done."""
        with self._lock:
            if not self._closed:
                self._closed = True
                # Blocking put is safe: the writer thread keeps draining until the sentinel.
                self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    """Make numpy values and detection objects JSON-serialisable."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "to_record"):  # app.inference.result.Detection
        return value.to_record()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
