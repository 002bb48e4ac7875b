"""LiveDetail: the live stream decoded as big as the view shows it, and no bigger.

It keeps the stream's `DecodePlan` told what the view needs (its viewport in device pixels,
and its zoom once the user leaves "fit"), from the view's `detail_changed` (zoom, resize, a
screen with another device pixel ratio): the next frame is decoded at that size. The frame on
screen is decoded again from its JPEG packet, off the GUI thread, when the view is zoomed in
past it: a paused or ended stream gets sharp too, and a playing one does not wait for its next
frame.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from PySide6.QtCore import QObject

from app.pipeline.live_decode import DecodePlan, ViewNeed
from app.sources.frame import Frame
from app.sources.grabs import redecode, side_for_scale
from app.ui.base.tasks import TaskSet
from app.ui.view.image_view import ImageView


class LiveDetail(QObject):
    def __init__(self, view: ImageView, plan: DecodePlan, executor: Executor, tasks: TaskSet) -> None:
        super().__init__()
        self.view, self.plan = view, plan
        self._executor, self._tasks = executor, tasks
        self._shown: Frame | None = None  # the live frame on screen (None: not ours)
        self._sharpening: Frame | None = None  # the frame being decoded again now
        self.sharpened = 0  # frames decoded again for a zoom (tests, statistics)
        self.suspended = False  # the view is hidden: decoded for the model alone (suspend)
        view.detail_changed.connect(self.update)
        self.update()

    def close(self) -> None:
        """The stream draws elsewhere now: this view's changes no longer set its decode size."""
        self.view.detail_changed.disconnect(self.update)
        self._shown = None

    def need(self) -> ViewNeed:
        view = self.view
        zoom = None if view.is_fit_mode() else view.detail_shown()
        return ViewNeed(view.viewport_pixels(), zoom)

    def update(self) -> None:
        """The view changed: frames from now on are decoded for what it shows now."""
        self.plan.view = None if self.suspended else self.need()
        self._sharpen()

    def suspend(self, on: bool) -> None:
        """The view is hidden (on) or shown again: nothing shows the frames meanwhile, so they
        are decoded only as big as the model needs."""
        self.suspended = on
        self.update()

    def shown(self, frame: Frame | None) -> None:
        """`frame` is on screen now (None: the view shows something else)."""
        self._shown = frame
        self._sharpen()

    def _sharpen(self) -> None:
        frame = self._shown
        if frame is None or frame.encoded is None or frame.original_size is None:
            return
        size = frame.original_size
        side = side_for_scale(size, self.plan.view.scale(size) if self.plan.view else 1.0)
        if max(frame.width, frame.height) >= min(side, max(size)) or self._sharpening is frame:
            return
        self._sharpening = frame
        self._tasks.spawn(self._decode_again(frame, side), name="sharpen the live frame")

    async def _decode_again(self, frame: Frame, side: int) -> None:
        try:
            loop = asyncio.get_running_loop()
            sharper = await loop.run_in_executor(self._executor, redecode, frame, side)
        finally:
            if self._sharpening is frame:
                self._sharpening = None
        if sharper is None or self._shown is not frame:
            return  # another frame came meanwhile (decoded for the new zoom already)
        picture = sharper.display if sharper.display is not None else sharper.image
        self.view.set_picture(picture, frame.source_size)
        self._shown = sharper
        self.sharpened += 1
        self._sharpen()  # zoomed in further meanwhile
