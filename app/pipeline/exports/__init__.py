"""Exports of a batch's detections in the formats other tools read, Qt-free (the viewer and
`python -m app infer --format` write the same files).

- `coco`: one JSON file (images with file names and sizes, categories, annotations).
- `yolo`, `voc`, `labelme`: one file per image, named after it (`photo.txt`, `photo.xml`,
  `photo.json`), in a folder that keeps the opened folder's sub-folders.
- `crops`: one image file per detection (the viewer only: it re-reads the images).
JSON Lines stays with the records themselves (`InferenceResult.to_record`).

Per-detection extras (segmentation, keypoints) plug in through `app.pipeline.exports.extras`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from app.pipeline.exports.coco import write_coco
from app.pipeline.exports.folder import write_per_image
from app.pipeline.exports.formats import FILE_FORMATS, FORMATS, PER_IMAGE_FORMATS, ExportFormat
from app.pipeline.exports.images import ExportImage, export_images, relative_name
from app.pipeline.exports.vocabulary import ModelVocabulary

__all__ = [
    "FILE_FORMATS",
    "FORMATS",
    "PER_IMAGE_FORMATS",
    "ExportFormat",
    "ExportImage",
    "ModelVocabulary",
    "export_images",
    "relative_name",
    "write_export",
]

# (output, images, the model's names) -> annotations (COCO) or files (per-image formats) written.
BatchWriter = Callable[[str | Path, Sequence[ExportImage], ModelVocabulary], int]
BATCH_WRITERS: dict[ExportFormat, BatchWriter] = {
    ExportFormat.COCO: write_coco,
    **{fmt: partial(write_per_image, fmt) for fmt in PER_IMAGE_FORMATS},
}


def write_export(
    fmt: ExportFormat,
    output: str | Path,
    images: list[ExportImage],
    vocabulary: ModelVocabulary | Sequence[str] | None = None,
) -> int:
    """Write `images` as `fmt` (coco: a file; yolo/voc/labelme: a folder), naming classes and
    keypoints as `vocabulary` does (or a list of class names). Returns how many annotations
    (coco) or files (per-image formats) were written. What the format cannot hold:
    `export_gaps`."""
    writer = BATCH_WRITERS.get(fmt)
    if writer is None:
        raise ValueError(f"not a format written from a batch's results: {str(fmt)!r}")
    return writer(output, images, ModelVocabulary.of(vocabulary))
