"""The export formats and what each one writes: one file, or a folder of files named after
the images. The command line spells them as the values below (`infer --format`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ExportFormat(enum.StrEnum):
    JSONL = "jsonl"  # the records themselves
    COCO = "coco"  # one COCO JSON file
    YOLO = "yolo"  # a folder: one .txt per image, classes.txt
    VOC = "voc"  # a folder: one Pascal VOC .xml per image
    LABELME = "labelme"  # a folder: one labelme .json per image
    DOTA = "dota"  # a folder: one DOTA .txt per image (oriented boxes' corners)
    CROPS = "crops"  # a folder: one .png per detection (the viewer only: it re-reads the images)


@dataclass(frozen=True)
class FormatInfo:
    folder: bool  # a folder of files named after the images (else one file)
    suffix: str  # of the file, or of each file in the folder


FORMAT_INFO: dict[ExportFormat, FormatInfo] = {
    ExportFormat.JSONL: FormatInfo(False, ".jsonl"),
    ExportFormat.COCO: FormatInfo(False, ".json"),
    ExportFormat.YOLO: FormatInfo(True, ".txt"),
    ExportFormat.VOC: FormatInfo(True, ".xml"),
    ExportFormat.LABELME: FormatInfo(True, ".json"),
    ExportFormat.DOTA: FormatInfo(True, ".txt"),
    ExportFormat.CROPS: FormatInfo(True, ".png"),
}
PER_IMAGE_FORMATS = (ExportFormat.YOLO, ExportFormat.VOC, ExportFormat.LABELME, ExportFormat.DOTA)
FILE_FORMATS = (ExportFormat.JSONL, ExportFormat.COCO)
FORMATS = FILE_FORMATS + PER_IMAGE_FORMATS  # what `infer --format` writes
