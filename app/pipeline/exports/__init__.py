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

from app.pipeline.exports.images import ExportImage, export_images, relative_name

PER_IMAGE_FORMATS = ("yolo", "voc", "labelme")
FILE_FORMATS = ("jsonl", "coco")
FORMATS = FILE_FORMATS + PER_IMAGE_FORMATS

__all__ = [
    "FILE_FORMATS",
    "FORMATS",
    "PER_IMAGE_FORMATS",
    "ExportImage",
    "export_images",
    "relative_name",
    "write_export",
]


def write_export(fmt: str, output: str, images: list[ExportImage], labels: list[str] | None = None) -> int:
    """Write `images` as `fmt` (coco: a file; yolo/voc/labelme: a folder). Returns how many
    annotations (coco) or files (per-image formats) were written."""
    from app.pipeline.exports.coco import write_coco
    from app.pipeline.exports.folder import write_per_image

    if fmt == "coco":
        return write_coco(output, images, labels or ())
    if fmt in PER_IMAGE_FORMATS:
        return write_per_image(fmt, output, images, labels or ())
    raise ValueError(f"unknown export format {fmt!r}")
