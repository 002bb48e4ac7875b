"""Recording of a live stream: the annotated frames to a video file, detections to JSON Lines.

`write()` is cheap (a queue put) and may run on the GUI thread: the Recorder opens its
files, draws the boxes and encodes on its own thread. `stop()` waits for that thread:
call it off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.inference.result import ClassScore, Detection, SemanticMask
from app.pipeline.annotate import annotate_rgb
from app.sources.frame import Frame
from app.sources.recorder import Recorder


def jsonl_path_for(video_path: Path) -> Path:
    return video_path.with_suffix(".jsonl")


def _render(image: np.ndarray, detections: list[Any], extra: dict[str, Any]) -> np.ndarray:
    return annotate_rgb(image, detections, extra.get("masks") or (), extra.get("classes") or ())


@dataclass(frozen=True)
class RecordingSummary:
    ok: bool
    text: str


class LiveRecording:
    """One recording at a time."""

    def __init__(self) -> None:
        self._recorder: Recorder | None = None
        self._last_index = -1
        self.error: str | None = None

    @property
    def active(self) -> bool:
        return self._recorder is not None

    @property
    def recorder(self) -> Recorder | None:
        return self._recorder

    def start(self, video_path: Path, fps: float) -> None:
        """Record from the next frame on. ValueError (naming the file) for an unusable name."""
        if self._recorder is not None:
            return
        self._recorder = Recorder(video_path, jsonl_path_for(video_path), fps, render=_render)
        self._last_index = -1

    def write(
        self,
        frame: Frame,
        detections: Sequence[Detection],
        masks: Sequence[SemanticMask] | None = None,
        classes: Sequence[ClassScore] | None = None,
    ) -> None:
        """Cheap (a queue put): the recorder's thread draws and makes the records (a mask's
        RLE costs ~0.1-1 ms, not for the GUI thread)."""
        recorder = self._recorder
        if recorder is None or frame.index <= self._last_index:
            return  # not recording, or an older frame that arrived late: keep the video in order
        self._last_index = frame.index
        extra: dict[str, Any] = {}
        if masks is not None:
            extra["masks"] = list(masks)
        if classes is not None:
            extra["classes"] = list(classes)
        recorder.write(frame.image, list(detections), frame.timestamp, frame=frame.index, extra=extra)

    def stop(self) -> RecordingSummary | None:
        """Close the files (blocks until written); None if nothing was recording."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        recorder.close()
        path = recorder.video_path
        if recorder.error:
            return RecordingSummary(False, recorder.error)
        if recorder.written == 0:
            return RecordingSummary(False, f"nothing recorded to {path}: no annotated frame arrived")
        skipped = f" ({recorder.dropped} skipped: the disk was too slow)" if recorder.dropped else ""
        return RecordingSummary(
            True, f"recorded {recorder.written} frames to {path} and {jsonl_path_for(path).name}{skipped}"
        )
