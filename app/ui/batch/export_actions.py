"""File > Export: ask where (the dialog starts in the last folder used, else the images' folder,
with a suggested name; a folder export may name a new folder),
never overwrite without asking, and write on the executor (the GUI thread never waits on disk).

Exports hold what the user sees: detections filtered by the current sliders."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from app.inference.result import InferenceResult
from app.pipeline.exports import ModelVocabulary, export_images, write_export
from app.pipeline.exports.crops import crop_paths, write_crops
from app.pipeline.exports.folder import planned_paths
from app.pipeline.exports.formats import FORMAT_INFO, ExportFormat
from app.pipeline.exports.gaps import export_gaps
from app.sources.images import read_image
from app.ui.base.settings import ViewerSettings
from app.ui.base.tasks import TaskSet
from app.ui.batch.export import save_annotated_png, write_jsonl
from app.ui.batch.gallery import Gallery
from app.ui.widgets.folder_dialog import ask_folder as ask_new_or_existing_folder

FILE_FILTERS = {
    "png": ("PNG image (*.png)", ".png"),
    "jsonl": ("JSON Lines (*.jsonl)", ".jsonl"),
    "coco": ("COCO JSON (*.json)", ".json"),
    "csv": ("CSV (*.csv)", ".csv"),
}
FOLDER_TITLES = {
    ExportFormat.YOLO: "Folder for the YOLO labels (one .txt per image, classes.txt)",
    ExportFormat.VOC: "Folder for the Pascal VOC files (one .xml per image)",
    ExportFormat.LABELME: "Folder for the labelme files (one .json per image)",
    ExportFormat.DOTA: "Folder for the DOTA files (one .txt per image, oriented boxes' corners)",
    ExportFormat.CROPS: "Folder for the object crops (one .png per detection)",
}
MAX_LISTED = 5  # existing files named in the overwrite question


def suggested_name(kind: str, stem: str = "detections") -> str:
    """e.g. "detections-20240605-1412.jsonl", "detections-coco-20240605-1412.json"."""
    stamp = time.strftime("%Y%m%d-%H%M")
    middle = "-coco" if kind == "coco" else ""
    return f"{stem}{middle}-{stamp}{FILE_FILTERS[kind][1]}"


def ask_overwrite(parent: QWidget, existing: list[Path], where: str) -> bool:
    """A question naming what would be replaced; blocks in a modal dialog (GUI thread only)."""
    listed = "\n".join(f"  {p.name}" for p in existing[:MAX_LISTED])
    more = f"\n  … and {len(existing) - MAX_LISTED} more" if len(existing) > MAX_LISTED else ""
    answer = QMessageBox.question(
        parent,
        "Replace files?",
        f"{len(existing)} file(s) in {where} would be replaced:\n{listed}{more}\n\nReplace them?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


class Exporter:
    def __init__(
        self,
        parent: QWidget,
        gallery: Gallery,
        executor: Executor,
        tasks: TaskSet,
        report: Callable[[str, bool], None],  # (message, is_error)
        settings: ViewerSettings,
        name_of: Callable[[str], str],
        vocabulary: Callable[[], ModelVocabulary],
    ) -> None:
        self._parent, self._gallery = parent, gallery
        self._executor, self._tasks, self._report = executor, tasks, report
        self._settings = settings
        self._name_of = name_of
        self._vocabulary = vocabulary
        # Asked before replacing files of a folder export; tests and scripts may replace it.
        self.confirm_overwrite: Callable[[list[Path], str], bool] = lambda existing, where: ask_overwrite(
            self._parent, existing, where
        )
        self.running: set[str] = set()  # paths being written (tests wait on it)

    # -- what is exported ---------------------------------------------------------------------
    def filtered(self, results: list[InferenceResult]) -> list[InferenceResult]:
        return [dataclasses.replace(r, detections=self._gallery.visible_detections(r)) for r in results]

    def current_results(self, whole_batch: bool) -> list[InferenceResult]:
        if whole_batch:
            return self.filtered(list(self._gallery.results.values()))
        current = self._gallery.current_result()
        return [] if current is None else self.filtered([current])

    # -- actions ----------------------------------------------------------------------------
    def export_png(self, path: str | None = None) -> None:
        image, result = self._gallery.current_image, self._gallery.current_result()
        if image is None:
            self._report("nothing to export: no image is shown", True)
            return
        stem = Path(self._gallery.current_key or "image").stem
        path = path or self.ask_file("Export the annotated image", "png", f"{stem}-annotated.png")
        if path:
            dets = self._gallery.drawable_detections(result)
            ok = result is not None and result.ok and result.source not in self._gallery.stale
            masks = result.masks if ok and result is not None else None
            classes = result.classes if ok and result is not None else None
            style = self._gallery.view.overlay_style()
            self._run(path, save_annotated_png, path, image, dets, masks, classes, style)

    def export_jsonl(self, whole_batch: bool, path: str | None = None) -> None:
        results = self.current_results(whole_batch)
        if not results:
            self._report("nothing to export: no results yet", True)
            return
        stem = "detections" if whole_batch else Path(results[0].source or "image").stem
        path = path or self.ask_file("Export detections (JSON Lines)", "jsonl", suggested_name("jsonl", stem))
        if path:
            self._run(path, write_jsonl, path, results)

    def export_all(self, fmt: ExportFormat, path: str | None = None) -> None:
        """The batch as `fmt`: jsonl or coco (a file), yolo, voc, labelme or crops (a folder)."""
        if fmt is ExportFormat.JSONL:
            self.export_jsonl(True, path)
            return
        results = self.current_results(True)
        images = export_images(results, self._name_of)
        if not images:
            self._report("nothing to export: no image has a result yet", True)
            return
        vocabulary = self._vocabulary()
        # What the format cannot hold (VOC has no masks, ...): said with the result.
        gaps = export_gaps(fmt, images)
        if not FORMAT_INFO[fmt].folder:  # COCO: one file
            path = path or self.ask_file("Export COCO JSON", "coco", suggested_name("coco"))
            if path:
                self._run(path, write_export, fmt, path, images, vocabulary, warnings=gaps)
            return
        folder = path or self.ask_folder(FOLDER_TITLES[fmt])
        if not folder:
            return
        crops = fmt is ExportFormat.CROPS  # re-reads the images: not a writer of results alone
        if crops:
            planned = [p for _image, _i, p in crop_paths(Path(folder), images)]
        else:
            planned = planned_paths(fmt, folder, images)
        existing = [p for p in planned if p.exists()]
        if existing and not self.confirm_overwrite(existing, folder):
            self._report(f"export to {folder} cancelled: nothing was replaced", False)
            return
        if crops:
            self._run(folder, write_crops, folder, images, read_image, warnings=gaps)
        else:
            self._run(folder, write_export, fmt, folder, images, vocabulary, warnings=gaps)

    def export_table(
        self, title: str, stem: str, write: Callable[[str], Any], path: str | None = None
    ) -> None:
        """A CSV (statistics, request log): `write(path)` runs on the executor."""
        path = path or self.ask_file(title, "csv", suggested_name("csv", stem))
        if path:
            self._run(path, write, path)

    # -- dialogs ------------------------------------------------------------------------------
    def ask_file(self, title: str, kind: str, name: str) -> str | None:
        filter_text, suffix = FILE_FILTERS[kind]
        start = str(Path(self.start_folder()) / name)
        # Qt's own dialog asks before replacing an existing file.
        path, _ = QFileDialog.getSaveFileName(
            self._parent, title, start, filter_text, options=QFileDialog.Option.DontUseNativeDialog
        )
        if not path:
            return None
        if not path.lower().endswith(suffix):
            path += suffix
        self._settings.set_last_dir("export", str(Path(path).parent))
        return path

    def start_folder(self) -> str:
        """Where an export dialog starts: the folder last exported to, else the batch's
        images' folder (where their labels usually go), else the home folder."""
        if last := self._settings.last_dir("export"):
            return last
        folders = {str(Path(key).parent) for key in self._gallery.results if Path(key).is_file()}
        if folders:
            try:
                return os.path.commonpath(sorted(folders))
            except ValueError:  # (different drives)
                pass
        return str(Path.home())

    def ask_folder(self, title: str) -> str | None:
        folder = ask_new_or_existing_folder(self._parent, title, self.start_folder())
        if not folder:
            return None
        self._settings.set_last_dir("export", folder)
        return folder

    def _run(self, path: str, fn: Callable[..., Any], *args: Any, warnings: Sequence[str] = ()) -> None:
        """`fn(*args)` on the executor; then "exported", or what failed, or (an error, so it is
        seen) what the format could not hold."""
        self.running.add(path)

        async def write() -> None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
            except (OSError, ValueError, KeyError) as e:
                self._report(f"export to {path} failed: {e}", True)
                return
            finally:
                self.running.discard(path)
            if warnings:
                self._report(f"exported {path}, but " + "; ".join(warnings), True)
            else:
                self._report(f"exported {path}", False)

        self._tasks.spawn(write(), name=f"export {path}")
