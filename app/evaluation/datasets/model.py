"""What a dataset reader hands back: images with their labelled objects, and every problem
met on the way (each naming the file and the line or field, and how many annotations it cost)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class DatasetFormat(enum.StrEnum):
    """The labelled-dataset formats read as ground truth: the ones the product exports
    (app.pipeline.exports.formats.ExportFormat spells them the same), as `evaluate --format`
    and the report's "format" spell them."""

    COCO = "coco"  # one COCO JSON file
    YOLO = "yolo"  # .txt label files with classes.txt or a data.yaml
    VOC = "voc"  # Pascal VOC .xml files
    LABELME = "labelme"  # labelme .json files


class DatasetError(Exception):
    """The dataset as a whole cannot be used (no such path, format not recognised, no images)."""


# Problem kinds (the report counts dropped annotations by these).
MALFORMED = "malformed annotation"
UNREADABLE = "unreadable label file"
UNKNOWN_CLASS = "class matches no model class"
OUTSIDE = "box outside the image"
CLIPPED = "box clipped to the image"
MISSING_IMAGE = "image not found"
UNSUPPORTED = "unsupported shape"
NO_SHAPE = "nothing to evaluate for this IoU type"
EXCLUDED = "image excluded"
OUTSIDE_PATH = "image path outside the dataset"  # not read unless --allow-outside-paths
DUPLICATE_ID = "duplicate image id"


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a dataset. `dropped`: annotations not evaluated because of it (0 for a
    note, e.g. a box clipped to the image); `image_dropped`: the whole image is left out."""

    file: str
    where: str | None
    kind: str
    message: str
    dropped: int = 1
    image_dropped: bool = False

    def text(self) -> str:
        where = f" ({self.where})" if self.where else ""
        return f"{self.file}{where}: {self.message}"

    def to_record(self) -> dict[str, object]:
        return {
            "file": self.file,
            "where": self.where,
            "kind": self.kind,
            "message": self.message,
            "dropped": self.dropped,
        }


@dataclass
class GroundTruthObject:
    """One labelled object. Coordinates in pixels of the image, or (YOLO) normalised to 0..1
    when the image's `normalized` is set. `box` is x1, y1, x2, y2 (x2/y2 exclusive)."""

    label: str
    where: str  # "line 3", "shapes[2]", "object 2": for problems found later
    box: tuple[float, float, float, float] | None = None
    polygons: list[list[float]] | None = None  # flat [x1, y1, x2, y2, ...] per polygon
    rle: dict[str, Any] | None = None  # COCO RLE (COCO JSON only)
    keypoints: list[float] | None = None  # [x, y, v] per keypoint, v as COCO (0: not labelled)
    crowd: bool = False  # COCO iscrowd, VOC difficult: detections on it are neither right nor wrong
    area: float | None = None  # as the file gives it (COCO); else computed


@dataclass
class GroundTruthImage:
    path: Path  # the image file (may not exist: the run reports it)
    name: str  # how the report names it (relative to the dataset where possible)
    label_file: str | None  # where its labels were read from (None: an image without labels)
    objects: list[GroundTruthObject] = field(default_factory=list)
    width: int | None = None  # as the label file gives it (the image's own size wins)
    height: int | None = None
    normalized: bool = False  # YOLO: coordinates are fractions of the image size


@dataclass
class Dataset:
    path: str
    format: DatasetFormat
    images: list[GroundTruthImage]
    class_names: list[str]  # the dataset's class names, in its own order
    problems: list[Problem] = field(default_factory=list)
    keypoint_names: list[str] = field(default_factory=list)

    @property
    def annotations(self) -> int:
        return sum(len(image.objects) for image in self.images)
