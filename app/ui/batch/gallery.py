"""Gallery: the opened images (thumbnail + result), which one is shown, and its boxes.

The full image of the selected entry is re-read from disk on the executor, never
kept for the whole batch. Threshold changes re-filter the received detections.

A result belongs to the version of the file that was read for it (its FileIdentity: path,
size, modification time). Opening a file again starts its entry afresh (pending, no old
boxes); a file changed on disk since its result is shown without boxes, with a message.
"""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal
from superqt.utils import signals_blocked

from app.inference.decoding.filtering import refilter
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask
from app.sources.files import FileIdentity, file_identity
from app.sources.images import read_image
from app.ui.base.tasks import TaskSet
from app.ui.batch.thumbnail_strip import ThumbnailStrip
from app.ui.state.viewer_state import Mode, ViewerState
from app.ui.view.image_view import ImageView
from app.ui.widgets.thresholds import ThresholdsWidget


class Gallery(QObject):
    """Draws the state's selected entry: reads its picture, puts its boxes on it, and writes
    back what it found (the entries read, their results, which picture is drawn)."""

    shown = Signal(str)  # key of the entry now displayed (image and boxes in place)
    load_failed = Signal(str)  # message naming the file and the cause
    # A picture's load ended (drawn, failed, or given up for another): `busy()` may be False now.
    settled = Signal()

    def __init__(
        self,
        state: ViewerState,
        view: ImageView,
        strip: ThumbnailStrip,
        thresholds: ThresholdsWidget,
        executor: Executor,
        tasks: TaskSet,
    ) -> None:
        super().__init__()
        self.state = state
        self.view, self.strip, self.thresholds = view, strip, thresholds
        self._executor = executor
        self._tasks = tasks
        # The picture of the shown entry (a cache of the file, not the truth: the state says
        # which entry is selected and whether its picture is drawn).
        self.current_image: np.ndarray | None = None
        self._loading: asyncio.Task[None] | None = None
        self._auto_show = True  # select the first entry that comes (a new list: 1 / N)
        # Files that could not be shown, said once: browsing back onto one is no new error.
        self._said_unreadable: set[str] = set()
        strip.selected.connect(self.select)
        thresholds.changed.connect(self._refilter)
        state.selection_changed.connect(self._on_selection)

    # -- the state's batch, as the exports and the browser read it ---------------------------------
    @property
    def results(self) -> dict[str, InferenceResult]:
        return self.state.results

    @property
    def stale(self) -> set[str]:
        return self.state.stale

    @property
    def current_key(self) -> str | None:
        return self.state.current_key

    # -- entries ---------------------------------------------------------------------
    def add_entry(
        self, key: str, thumbnail: np.ndarray, identity: FileIdentity | None = None, job: int | None = None
    ) -> None:
        """An input was read by `job` (its result follows). Read again (opened again): the old
        result is dropped at once, so the old boxes are never drawn on the new picture. The
        first entry of a new list is selected at once: the view opens on 1 / N, whichever
        image finishes first."""
        renewed = self.state.add_entry(key, identity, job)
        self.strip.add_item(key, thumbnail, None)
        if renewed and key == self.state.current_key:
            self.current_image = None
            self.view.set_detections([])
            self.select(key)  # the new picture, boxes once its result is here
        elif self._auto_show and self.state.current_key is None and self.state.mode is Mode.BATCH:
            self._auto_show = False
            self.select(key)

    def has_entry(self, key: str) -> bool:
        return self.strip.item_for(key) is not None

    def on_result(self, result: InferenceResult) -> None:
        key = result.source
        if key is None:
            return
        self.state.set_result(dataclasses.replace(result, tag=None))  # drop the tag: keep entries small
        self.strip.set_status(key, result.ok)
        if key == self.state.current_key:
            self._refilter()
            if self.current_image is not None:
                self.view.set_overlays(*self._overlays())

    def forget_results(self) -> None:
        """The results are of a model no longer in use: every entry waits for its result again
        and the picture shown keeps none of the old boxes, masks or classes."""
        self.state.forget_results()
        entries = self.strip.keys()
        for key in entries:
            self.strip.set_status(key, None)
            self.strip.set_count(key, None)
        if self.current_image is not None:
            self.view.set_detections([])
            self.view.set_overlays(None, None)

    def expect_new_job(self) -> None:
        self._auto_show = True

    def clear(self) -> None:
        self._said_unreadable.clear()
        self.state.clear_batch()
        self.strip.clear()
        self.view.clear()
        self.current_image = None
        self._auto_show = True

    def busy(self) -> bool:
        return self._loading is not None and not self._loading.done()

    # -- display -------------------------------------------------------------------------
    def select(self, key: str) -> None:
        """Show `key` (the user, the browser, a first result): through the state."""
        if key == self.state.current_key:
            if self.current_image is None:
                self._show(key)  # selected, but its picture is not drawn: read it again
            return
        self.state.select(key)

    def _on_selection(self, key: str | None) -> None:
        if key is None:
            # Nothing of the batch is drawn any more (e.g. live video took the view): the view
            # is left as it is, to whoever draws next.
            self.current_image = None
            if self._loading is not None:
                self._loading.cancel()
            return
        self._show(key)

    def _show(self, key: str) -> None:
        self.current_image = None
        item = self.strip.item_for(key)
        if item is not None and self.strip.currentItem() is not item:
            with signals_blocked(self.strip):
                self.strip.setCurrentItem(item)
        if self._loading is not None:
            self._loading.cancel()
        self._loading = self._tasks.spawn(self._load(key), name=f"show {Path(key).name}")
        # A done callback runs once the task is done: `busy()` already tells the truth then.
        self._loading.add_done_callback(lambda _task: self.settled.emit())

    async def _load(self, key: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            image, identity = await loop.run_in_executor(self._executor, _read_with_identity, key)
        except (ValueError, OSError) as e:
            if key == self.state.current_key:
                self.current_image = None
                self.view.clear()
                # Said once per file; not at all when its failed result already said it.
                result = self.state.results.get(key)
                if key not in self._said_unreadable and (result is None or result.ok):
                    self.load_failed.emit(str(e))
                self._said_unreadable.add(key)
            return
        if key != self.state.current_key:
            return
        inferred = self.state.identity(key)
        if inferred is not None and identity != inferred:
            self.state.mark_stale(key)
            self.load_failed.emit(
                f"{key} changed on disk since it was inferred: its boxes are not shown; "
                "open it again to run it again"
            )
        self.current_image = image
        self.view.set_image(image, self.drawable_detections(), *self._overlays())
        self.state.set_shown(key)
        self.shown.emit(key)

    def current_result(self) -> InferenceResult | None:
        return self.state.current_result()

    def visible_detections(self, result: InferenceResult | None = None) -> list[Detection]:
        """The received detections of `result` (default: the shown one) that pass the sliders."""
        result = result or self.current_result()
        if result is None or not result.ok:
            return []
        return refilter(result.detections, self.thresholds.score(), self.thresholds.iou())

    def drawable_detections(self, result: InferenceResult | None = None) -> list[Detection]:
        """What may be drawn on the picture read from disk now: nothing when the file changed
        since its result (the JSON exports keep the result as it was inferred)."""
        result = result or self.current_result()
        if result is not None and result.source in self.state.stale:
            return []
        return self.visible_detections(result)

    def _overlays(self) -> tuple[list[SemanticMask] | None, list[ClassScore] | None]:
        """Semantic masks and top-k classes of the shown result (None: the model gives none,
        or the file changed on disk since it was inferred)."""
        result = self.current_result()
        if result is None or not result.ok or result.source in self.state.stale:
            return None, None
        return result.masks, result.classes

    def _refilter(self, *_args: object) -> None:
        # No new request: the detections already received are filtered again.
        if self.current_image is not None:
            self.view.set_detections(self.drawable_detections())


def _read_with_identity(path: str) -> tuple[np.ndarray, FileIdentity | None]:
    """The picture and which version of the file it is (stat first: a change while reading
    makes the versions differ, never match wrongly)."""
    identity = file_identity(path)
    return read_image(path), identity
