"""Recording of the live preview: the annotated frames to a video file, detections to JSONL.

The Recorder (app/sources/recorder.py) writes on its own thread; opening and closing it
touch the disk, so both run on the executor. Frames that arrive while it opens are
left out of the recording.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

import cv2
import numpy as np

from app.inference.keypoints import VISIBLE_SCORE
from app.inference.result import Detection
from app.sources.frame import Frame
from app.sources.recorder import Recorder
from app.ui.colors import class_rgb, detection_label
from app.ui.tasks import TaskSet

log = logging.getLogger(__name__)


def annotate_rgb(image: np.ndarray, detections: Sequence[Detection]) -> np.ndarray:
    """A copy of `image` with the masks (half opaque), boxes, labels and keypoints drawn in
    (what the recording shows)."""
    out = np.array(image, copy=True)
    for det in detections:
        if det.mask is not None and det.mask.area:
            x1, y1, x2, y2 = det.mask.bbox()
            region, pixels = out[y1:y2, x1:x2], det.mask.crop()
            fill = np.array(class_rgb(det.class_id), np.uint16)
            region[pixels] = ((region[pixels].astype(np.uint16) + fill) // 2).astype(np.uint8)
    for det in detections:
        x1, y1, x2, y2 = (round(float(v)) for v in det.box)
        color = class_rgb(det.class_id)
        cv2.rectangle(out, (x1, y1), (x2 - 1, y2 - 1), color, 2)
        text = detection_label(det.label, det.score)
        (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.5, 1)
        top = y1 - th - base - 4 if y1 - th - base - 4 >= 0 else y1
        cv2.rectangle(out, (x1, top), (x1 + tw + 6, top + th + base + 4), color, -1)
        cv2.putText(
            out, text, (x1 + 3, top + th + 2), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1, cv2.LINE_AA
        )
        for x, y, score in det.keypoints or ():
            if score >= VISIBLE_SCORE:
                cv2.circle(out, (round(x), round(y)), 3, color, -1, cv2.LINE_AA)
    return out


def jsonl_path_for(video_path: Path) -> Path:
    return video_path.with_suffix(".jsonl")


class LiveRecording:
    """One recording at a time. `write()` on the GUI thread (cheap: a copy and a queue put)."""

    def __init__(self, executor: Executor, tasks: TaskSet, report: Callable[[str, bool], None]) -> None:
        self._executor = executor
        self._tasks = tasks
        self._report = report
        self._path: Path | None = None
        self._recorder: Recorder | None = None
        self._opening = False
        self._last_index = -1

    @property
    def active(self) -> bool:
        return self._path is not None

    @property
    def recorder(self) -> Recorder | None:
        return self._recorder

    def start(self, video_path: Path) -> None:
        """Record from the next annotated frame on (the file is opened with that frame's size)."""
        if self._path is not None:
            return
        self._path = video_path
        self._last_index = -1

    def write(self, frame: Frame, detections: Sequence[Detection], fps: float) -> None:
        if self._path is None or frame.index <= self._last_index:
            return  # not recording, or an older frame that arrived late: keep the video in order
        if self._recorder is None:
            if not self._opening:
                self._opening = True
                self._tasks.spawn(
                    self._open(self._path, fps, (frame.width, frame.height)), name="open recording"
                )
            return
        self._last_index = frame.index
        # The Detections themselves: the recorder's thread makes their records (a mask's RLE
        # costs ~0.1-1 ms, not for the GUI thread).
        self._recorder.write(annotate_rgb(frame.image, detections), list(detections), frame.timestamp)

    async def _open(self, path: Path, fps: float, size: tuple[int, int]) -> None:
        loop = asyncio.get_running_loop()
        try:
            recorder = await loop.run_in_executor(
                self._executor, lambda: Recorder(path, jsonl_path_for(path), fps, size)
            )
        except ValueError as e:
            self._opening = False
            self._path = None
            self._report(str(e), True)
            return
        finally:
            self._opening = False
        if self._path != path:  # stopped while opening
            await loop.run_in_executor(self._executor, recorder.close)
            return
        self._recorder = recorder
        self._report(f"recording to {path} and {jsonl_path_for(path).name}", False)

    async def stop(self) -> str | None:
        """Close the files (on the executor); returns a summary, None if nothing was recording."""
        path, self._path = self._path, None
        recorder, self._recorder = self._recorder, None
        if path is None:
            return None
        if recorder is None:
            return f"nothing recorded to {path}: no annotated frame arrived"
        await asyncio.get_running_loop().run_in_executor(self._executor, recorder.close)
        if recorder.error:
            return recorder.error
        skipped = f" ({recorder.dropped} skipped: the disk was too slow)" if recorder.dropped else ""
        return f"recorded {recorder.written} frames to {path} and {jsonl_path_for(path).name}{skipped}"
