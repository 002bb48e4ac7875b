"""Recording of a live stream: the annotated frames to a video file, detections to JSON Lines.

`write()` is cheap (a queue put) and may run on the GUI thread: the Recorder opens its
files, draws the annotations and encodes on its own thread. `stop()` waits for that thread:
call it off the GUI thread.

The frames are drawn as the view draws them: the draw list of app/drawing, built with the view's
style, painted by the painter the viewer gives (its QPainter backend; this layer has no Qt).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.drawing.draw_list import DrawList, TrailSource, draw_list
from app.drawing.style import AnnotationStyle
from app.inference.result import ClassScore, Detection, SemanticMask
from app.sources.frame import Frame
from app.sources.recorder import Recorder

# (frame, its draw list) -> the annotated frame; may paint into the frame (the recorder's own copy).
PaintFrame = Callable[[np.ndarray, DrawList], np.ndarray]


def jsonl_path_for(video_path: Path) -> Path:
    return video_path.with_suffix(".jsonl")


@dataclass(frozen=True)
class RecordingSummary:
    ok: bool
    text: str


class LiveRecording:
    """One recording at a time. `paint` draws the annotations (None: frames recorded as captured)."""

    def __init__(self, paint: PaintFrame | None = None) -> None:
        self._recorder: Recorder | None = None
        self._last_index = -1
        self.error: str | None = None
        self._paint = paint

    def annotated(
        self,
        image: np.ndarray,
        detections: Sequence[Detection],
        masks: Sequence[SemanticMask] | None = None,
        classes: Sequence[ClassScore] | None = None,
        style: AnnotationStyle | None = None,
        trails: Sequence[TrailSource] = (),
    ) -> np.ndarray:
        """`image` as the recording draws it (a new array; `image` is left as it is)."""
        copy = np.array(image, dtype=np.uint8, copy=True)
        return self._draw(copy, detections, masks, classes, style, trails)

    def _render(self, image: np.ndarray, detections: list[Any], extra: dict[str, Any]) -> np.ndarray:
        # The Recorder's render, on its thread, into its own copy of the frame.
        masks, classes = extra.get("masks"), extra.get("classes")
        return self._draw(image, detections, masks, classes, extra.get("style"), extra.get("trails") or ())

    def _draw(
        self,
        image: np.ndarray,
        detections: Sequence[Detection],
        masks: Sequence[SemanticMask] | None,
        classes: Sequence[ClassScore] | None,
        style: AnnotationStyle | None,
        trails: Sequence[TrailSource],
    ) -> np.ndarray:
        """Paint into `image`: its draw list is built here, on the recorder's thread (not the GUI's)."""
        if self._paint is None:
            return image
        h, w = image.shape[:2]
        return self._paint(image, draw_list((w, h), detections, masks, classes, style, trails))

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
        self._recorder = Recorder(video_path, jsonl_path_for(video_path), fps, render=self._render)
        self._last_index = -1

    def write(
        self,
        frame: Frame,
        detections: Sequence[Detection],
        masks: Sequence[SemanticMask] | None = None,
        classes: Sequence[ClassScore] | None = None,
        style: AnnotationStyle | None = None,
        trails: Sequence[TrailSource] = (),
    ) -> None:
        """Cheap (a queue put): the recorder's thread draws and makes the records (a mask's
        RLE costs ~0.1-1 ms, not for the GUI thread). `style` and `trails`: as the view draws
        this frame (trails frozen: `frozen_trails`)."""
        recorder = self._recorder
        if recorder is None or frame.index <= self._last_index:
            return  # not recording, or an older frame that arrived late: keep the video in order
        self._last_index = frame.index
        extra: dict[str, Any] = {}
        if masks is not None:
            extra["masks"] = list(masks)
        if classes is not None:
            extra["classes"] = list(classes)
        draw_extra = {"style": style, "trails": tuple(trails)}
        recorder.write(
            frame.image,
            list(detections),
            frame.timestamp,
            frame=frame.index,
            extra=extra,
            draw_extra=draw_extra,
            unchanging=True,  # a captured frame is never drawn into: copied on the recorder's thread
        )

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
        size = f" at {recorder.size[0]}x{recorder.size[1]}" if recorder.size else ""
        return RecordingSummary(
            True,
            f"recorded {recorder.written} frames{size} to {path} and {jsonl_path_for(path).name}{skipped}",
        )
