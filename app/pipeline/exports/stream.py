"""An export written as results arrive (the command line): per-image files at once, COCO at
the end. `add()` may be called from any thread; `warnings()` says what the format could not
hold (app.pipeline.exports.gaps). Every file is written whole or not at all
(app.system.atomic_files); `check()` before the run says whether it can be written at all."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from app.inference.result import InferenceResult
from app.pipeline.exports.coco import write_coco
from app.pipeline.exports.folder import PerImageWriter
from app.pipeline.exports.formats import FORMAT_INFO, ExportFormat
from app.pipeline.exports.gaps import ExportGaps
from app.pipeline.exports.images import ExportImage, export_images, relative_name
from app.pipeline.exports.vocabulary import ModelVocabulary
from app.system.atomic_files import check_writable


class ExportStream:
    def __init__(
        self,
        fmt: ExportFormat,
        output: str | Path,
        roots: Sequence[str | os.PathLike[str]],
        vocabulary: ModelVocabulary | Sequence[str] = (),
    ) -> None:
        self.fmt = fmt
        self.output = Path(output)
        self.roots = list(roots)
        self.vocabulary = ModelVocabulary.of(vocabulary)
        self.gaps = ExportGaps()
        self._lock = threading.Lock()
        self._coco: list[ExportImage] = []
        # A folder format writes each image's file at once; COCO writes its one file at the end.
        self._writer = PerImageWriter(fmt, output, self.vocabulary) if FORMAT_INFO[fmt].folder else None

    def check(self) -> None:
        """OSError unless the export's folder (per-image formats: made now) takes a file."""
        if self._writer is not None:
            self._writer.check()
        else:
            check_writable(self.output.parent)

    def add(self, result: InferenceResult) -> None:
        for image in export_images([result], lambda s: relative_name(s, self.roots)):
            self.gaps.add(image)
            if self._writer is not None:
                self._writer.write(image)
            else:
                with self._lock:
                    self._coco.append(image)

    def finish(self) -> int:
        """Write what is left (COCO's file, YOLO's classes.txt); the number of images exported."""
        if self._writer is not None:
            self._writer.finish()
            return self._writer.written
        with self._lock:
            images = sorted(self._coco, key=lambda i: (i.name, -1 if i.frame is None else i.frame))
        write_coco(self.output, images, self.vocabulary)
        return len(images)

    def warnings(self) -> list[str]:
        """What the format could not hold of the results added, one sentence per kind."""
        return self.gaps.messages(self.fmt)
