"""Per-image exports (YOLO, Pascal VOC, labelme): one file per image in a folder, named after
the image and keeping the opened folder's sub-folders (`sub/photo.jpg` -> `sub/photo.txt`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from app.pipeline.exports.dota import dota_text
from app.pipeline.exports.formats import FORMAT_INFO, ExportFormat
from app.pipeline.exports.images import ExportImage, StemBook, names_by_id
from app.pipeline.exports.labelme import labelme_document
from app.pipeline.exports.voc import voc_xml
from app.pipeline.exports.vocabulary import ModelVocabulary
from app.pipeline.exports.yolo import CLASSES_FILE, classes_text, yolo_text
from app.system.atomic_files import check_writable, write_whole


def _labelme_text(image: ExportImage, path: Path, vocabulary: ModelVocabulary) -> str:
    return json.dumps(labelme_document(image, path, vocabulary), ensure_ascii=False, indent=2) + "\n"


# The text of one image's file (image, the file's path, the model's names) by format.
PER_IMAGE_TEXT: dict[ExportFormat, Callable[[ExportImage, Path, ModelVocabulary], str]] = {
    ExportFormat.YOLO: lambda image, _path, _vocabulary: yolo_text(image),
    ExportFormat.VOC: lambda image, _path, _vocabulary: voc_xml(image),
    ExportFormat.LABELME: _labelme_text,
    ExportFormat.DOTA: lambda image, _path, _vocabulary: dota_text(image),
}


class PerImageWriter:
    """`write(image)` as results come (any thread), `finish()` once at the end (YOLO's
    classes.txt needs every class seen). Each file is written whole or not at all; the first
    that cannot be written raises OSError (the caller stops there)."""

    def __init__(
        self, fmt: ExportFormat, folder: str | Path, vocabulary: ModelVocabulary | Sequence[str] = ()
    ) -> None:
        if fmt not in PER_IMAGE_TEXT:
            raise ValueError(f"not a per-image format: {str(fmt)!r} (one of {', '.join(PER_IMAGE_TEXT)})")
        self.fmt = ExportFormat(fmt)
        self._text = PER_IMAGE_TEXT[self.fmt]
        self.folder = Path(folder)
        self.vocabulary = ModelVocabulary.of(vocabulary)
        self.written = 0
        self._stems = StemBook()
        self._seen: dict[int, str] = {}  # class id -> label seen (for YOLO's classes.txt)
        self._lock = threading.Lock()

    def check(self) -> None:
        """OSError now (before any inference) when no file can be written into the folder."""
        check_writable(self.folder, create=True)

    def path_for(self, image: ExportImage) -> Path:
        return self.folder / f"{self._stems.claim(image.stem)}{FORMAT_INFO[self.fmt].suffix}"

    def write(self, image: ExportImage) -> Path:
        path = self.path_for(image)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, self._text(image, path, self.vocabulary))
        with self._lock:
            self.written += 1
            for class_id, label in image.class_labels().items():
                self._seen.setdefault(class_id, label)
        return path

    def finish(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.fmt is ExportFormat.YOLO:  # the class names, once every class is seen
            with self._lock:
                names = names_by_id(self._seen, self.vocabulary.labels)
            write_whole(self.folder / CLASSES_FILE, classes_text(names))


def write_per_image(
    fmt: ExportFormat,
    folder: str | Path,
    images: Iterable[ExportImage],
    vocabulary: ModelVocabulary | Sequence[str] = (),
) -> int:
    """Write every image's file; returns how many."""
    writer = PerImageWriter(fmt, folder, vocabulary)
    for image in images:
        writer.write(image)
    writer.finish()
    return writer.written


def planned_paths(fmt: ExportFormat, folder: str | Path, images: Iterable[ExportImage]) -> list[Path]:
    """The files an export of `images` into `folder` would write (to ask before overwriting)."""
    stems = StemBook()
    suffix = FORMAT_INFO[fmt].suffix
    paths = [Path(folder) / f"{stems.claim(image.stem)}{suffix}" for image in images]
    if fmt is ExportFormat.YOLO:
        paths.append(Path(folder) / CLASSES_FILE)
    return paths
