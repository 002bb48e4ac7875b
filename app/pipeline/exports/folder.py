"""Per-image exports (YOLO, Pascal VOC, labelme): one file per image in a folder, named after
the image and keeping the opened folder's sub-folders (`sub/photo.jpg` -> `sub/photo.txt`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from app.pipeline.exports.images import ExportImage, StemBook, class_names
from app.pipeline.exports.labelme import labelme_document
from app.pipeline.exports.voc import voc_xml
from app.pipeline.exports.yolo import CLASSES_FILE, classes_text, yolo_text

SUFFIXES = {"yolo": ".txt", "voc": ".xml", "labelme": ".json"}


class PerImageWriter:
    """`write(image)` as results come (any thread), `finish()` once at the end (YOLO's
    classes.txt needs every class seen)."""

    def __init__(self, fmt: str, folder: str | Path, labels: Sequence[str] = ()) -> None:
        if fmt not in SUFFIXES:
            raise ValueError(f"not a per-image format: {fmt!r} (one of {', '.join(SUFFIXES)})")
        self.fmt = fmt
        self.folder = Path(folder)
        self.labels = list(labels)
        self.written = 0
        self._stems = StemBook()
        self._seen: list[ExportImage] = []  # detections only (for class names): small
        self._lock = threading.Lock()

    def path_for(self, image: ExportImage) -> Path:
        return self.folder / f"{self._stems.claim(image.stem)}{SUFFIXES[self.fmt]}"

    def write(self, image: ExportImage) -> Path:
        path = self.path_for(image)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.fmt == "yolo":
            text = yolo_text(image)
        elif self.fmt == "voc":
            text = voc_xml(image)
        else:
            text = json.dumps(labelme_document(image, path), ensure_ascii=False, indent=2) + "\n"
        path.write_text(text, encoding="utf-8")
        with self._lock:
            self.written += 1
            if image.detections:
                self._seen.append(ExportImage(image.source, image.name, 1, 1, image.detections))
        return path

    def finish(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.fmt == "yolo":
            with self._lock:
                names = class_names(self._seen, self.labels)
            (self.folder / CLASSES_FILE).write_text(classes_text(names), encoding="utf-8")


def write_per_image(
    fmt: str, folder: str | Path, images: Iterable[ExportImage], labels: Sequence[str] = ()
) -> int:
    """Write every image's file; returns how many."""
    writer = PerImageWriter(fmt, folder, labels)
    for image in images:
        writer.write(image)
    writer.finish()
    return writer.written


def planned_paths(fmt: str, folder: str | Path, images: Iterable[ExportImage]) -> list[Path]:
    """The files an export of `images` into `folder` would write (to ask before overwriting)."""
    stems = StemBook()
    paths = [Path(folder) / f"{stems.claim(image.stem)}{SUFFIXES[fmt]}" for image in images]
    if fmt == "yolo":
        paths.append(Path(folder) / CLASSES_FILE)
    return paths
