"""Record annotated frames to a video file plus one JSON line of detections per frame."""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import cv2
import numpy as np

log = logging.getLogger(__name__)

_FOURCC = {".mp4": "mp4v", ".m4v": "mp4v", ".mov": "mp4v", ".avi": "MJPG"}


class Recorder:
    """Write RGB frames to `video_path` and their detections to `jsonl_path`, off the caller's thread.

    `write()` never blocks: frames go into a bounded queue drained by a writer
    thread; when the queue is full the frame is left out of the recording and
    counted in `dropped`. The JSONL "frame" field is the frame's index in the
    recorded video, so both files stay aligned even when frames are dropped.
    """

    def __init__(
        self,
        video_path: str | Path,
        jsonl_path: str | Path,
        fps: float,
        size: tuple[int, int],
        *,
        queue_size: int = 64,
    ) -> None:
        self.video_path = Path(video_path)
        self.jsonl_path = Path(jsonl_path)
        self.size = (int(size[0]), int(size[1]))
        codec = _FOURCC.get(self.video_path.suffix.lower())
        if codec is None:
            raise ValueError(f"cannot record to {self.video_path}: use a .mp4, .mov, .m4v or .avi file name")
        if fps <= 0 or self.size[0] <= 0 or self.size[1] <= 0:
            raise ValueError(f"cannot record to {self.video_path}: invalid fps {fps} or size {size}")
        writer = cv2.VideoWriter(str(self.video_path), cv2.VideoWriter.fourcc(*codec), float(fps), self.size)
        if not writer.isOpened():
            writer.release()
            raise ValueError(f"cannot record to {self.video_path}: OpenCV cannot open a {codec} writer there")
        try:
            self._jsonl = self.jsonl_path.open("w", encoding="utf-8")
        except OSError as exc:
            writer.release()
            raise ValueError(f"cannot write {self.jsonl_path}: {exc.strerror or exc}") from exc
        self._writer = writer
        self._queue: queue.Queue[tuple[np.ndarray, list[Any], float] | None] = queue.Queue(queue_size)
        self._t0 = time.monotonic()
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
        self, image: np.ndarray, detections: Sequence[Any] = (), timestamp: float | None = None
    ) -> bool:
        """Queue one RGB frame with its detection records; False if it was not queued.

        timestamp: time.monotonic() of the frame (default: now).
        """
        now = time.monotonic() if timestamp is None else timestamp
        # Copy: the caller may draw into or reuse this buffer after we return.
        item = (np.array(image, dtype=np.uint8, copy=True), list(detections), now - self._t0)
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
            # Released on this thread, the only one that ever touched the writer.
            self._writer.release()
            self._jsonl.close()

    def _write_one(self, rgb: np.ndarray, detections: list[Any], seconds: float) -> None:
        try:
            if rgb.ndim == 2:
                bgr = cv2.cvtColor(rgb, cv2.COLOR_GRAY2BGR)
            else:
                bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
            if (bgr.shape[1], bgr.shape[0]) != self.size:
                # A writer given another size silently writes nothing: fit the frame instead.
                bgr = cv2.resize(bgr, self.size, interpolation=cv2.INTER_AREA)
            self._writer.write(bgr)
            record = {"frame": self._written, "timestamp": round(seconds, 6), "detections": detections}
            self._jsonl.write(json.dumps(record, default=_jsonable) + "\n")
            self._written += 1
        except Exception as exc:
            self._error = f"recording to {self.video_path} failed: {exc}"
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
