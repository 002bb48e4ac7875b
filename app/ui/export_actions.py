"""File > Export…: ask for a file name, write on the executor (the GUI thread never waits on disk)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from PySide6.QtWidgets import QFileDialog, QWidget

from app.inference.result import InferenceResult
from app.ui.export import save_annotated_png, to_coco_results, write_coco_results, write_jsonl
from app.ui.gallery import Gallery
from app.ui.tasks import TaskSet


class Exporter:
    """Exports what the user sees: detections filtered by the current sliders."""

    def __init__(
        self,
        parent: QWidget,
        gallery: Gallery,
        executor: Executor,
        tasks: TaskSet,
        report: Callable[[str, bool], None],  # (message, is_error)
    ) -> None:
        self._parent, self._gallery = parent, gallery
        self._executor, self._tasks, self._report = executor, tasks, report

    def filtered(self, results: list[InferenceResult]) -> list[InferenceResult]:
        return [dataclasses.replace(r, detections=self._gallery.visible_detections(r)) for r in results]

    def current_results(self, whole_batch: bool) -> list[InferenceResult]:
        if whole_batch:
            return self.filtered(list(self._gallery.results.values()))
        current = self._gallery.current_result()
        return [] if current is None else self.filtered([current])

    def export_png(self, path: str | None = None) -> None:
        image, result = self._gallery.current_image, self._gallery.current_result()
        if image is None:
            self._report("nothing to export: no image is shown", True)
            return
        path = path or self._ask("Export annotated image", "PNG image (*.png)", ".png")
        if path:
            dets = self._gallery.drawable_detections(result)
            self._run(save_annotated_png, path, image, dets)

    def export_jsonl(self, whole_batch: bool, path: str | None = None) -> None:
        results = self.current_results(whole_batch)
        if not results:
            self._report("nothing to export: no results yet", True)
            return
        path = path or self._ask("Export detections (JSON Lines)", "JSON Lines (*.jsonl)", ".jsonl")
        if path:
            self._run(write_jsonl, path, results)

    def export_coco(self, whole_batch: bool, path: str | None = None) -> None:
        results = self.current_results(whole_batch)
        if not results:
            self._report("nothing to export: no results yet", True)
            return
        path = path or self._ask("Export COCO results", "COCO results JSON (*.json)", ".json")
        if path:
            # Image ids: 1..N in the order the images were opened.
            ids = {r.source: i for i, r in enumerate(results, start=1) if r.source is not None}
            self._run(write_coco_results, path, to_coco_results(results, ids))

    def _ask(self, title: str, filter_text: str, suffix: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(
            self._parent, title, "", filter_text, options=QFileDialog.Option.DontUseNativeDialog
        )
        if path and not path.lower().endswith(suffix):
            path += suffix
        return path or None

    def _run(self, fn: Callable[..., Any], path: str, *args: Any) -> None:
        async def write() -> None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, fn, path, *args)
            except (OSError, ValueError, KeyError) as e:
                self._report(f"export to {path} failed: {e}", True)
                return
            self._report(f"exported {path}", False)

        self._tasks.spawn(write(), name=f"export {path}")
