"""What every exporter works from: the images that have results, named relative to what was opened."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from app.annotations.regions import region_instances
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask

VIDEO_FRAME_DIGITS = 6


@dataclass(frozen=True)
class ExportImage:
    """One image (or video frame) with a result.

    source: the path the pipeline read (to re-read the image, or point a tool at it).
    name: posix path relative to the opened folder (`sub/photo.jpg`), or the file name of
      an image opened on its own; for a video frame the video's name.
    masks: a semantic segmentation's classes (None: the model gives none); written as their
      connected regions (`regions`).
    classes: a classifier's top-k (None: not a classifier); no dataset format holds them.
    """

    source: str
    name: str
    width: int
    height: int
    detections: list[Detection] = field(default_factory=list)
    frame: int | None = None
    masks: list[SemanticMask] | None = None
    classes: list[ClassScore] | None = None

    def class_labels(self) -> dict[int, str]:
        """The classes this image's results name: class id -> label."""
        seen = {det.class_id: det.label for det in reversed(self.detections)}
        for semantic in self.masks or ():
            seen.setdefault(semantic.class_id, semantic.label)
        return seen

    @functools.cached_property
    def regions(self) -> list[Detection]:
        """The semantic masks as instances: one per connected region of each class (box, mask,
        score = its share of the class's pixels), as `evaluate` scores them."""
        return region_instances(self.masks) if self.masks else []

    @property
    def stem(self) -> str:
        """The name without its suffix (`sub/photo`); a video frame adds its number
        (`clip_000042`), as if the frames had been extracted."""
        path = PurePosixPath(self.name)
        stem = str(path.with_suffix("")) if path.suffix else str(path)
        return stem if self.frame is None else f"{stem}_{self.frame:0{VIDEO_FRAME_DIGITS}d}"

    @property
    def file_name(self) -> str:
        """The image's name in an export: its own name, or `clip_000042.png` for a frame."""
        return self.name if self.frame is None else f"{self.stem}.png"


def relative_name(source: str, roots: Sequence[str | os.PathLike[str]]) -> str:
    """`source` relative to the opened folder that holds it (posix separators), else its file name.

    `roots` are the paths the user opened (files and folders); the deepest folder wins.
    """
    path = Path(source)
    best: PurePosixPath | None = None
    for root in roots:
        root_path = Path(root)
        try:
            rel = path.relative_to(root_path)
        except ValueError:
            try:  # the same place spelled differently (relative vs absolute)
                rel = path.resolve().relative_to(root_path.resolve())
            except (ValueError, OSError):
                continue
        if rel.parts and (best is None or len(rel.parts) < len(best.parts)):
            best = PurePosixPath(*rel.parts)
    return str(best) if best is not None else path.name


def export_images(
    results: Iterable[InferenceResult], name_of: Callable[[str], str] = lambda s: Path(s).name
) -> list[ExportImage]:
    """The results that have an image to describe (ok, with a size), in the given order.

    Failed, timed-out, cancelled and skipped inputs have no detections to export.
    """
    images = []
    for r in results:
        if not r.ok or r.source is None or not r.width or not r.height:
            continue
        masks = list(r.masks) if r.masks is not None else None
        classes = list(r.classes) if r.classes is not None else None
        images.append(
            ExportImage(
                r.source, name_of(r.source), r.width, r.height, list(r.detections), r.frame, masks, classes
            )
        )
    return images


def class_names(images: Iterable[ExportImage], labels: Sequence[str] = ()) -> list[str]:
    """Names indexed by class id, for formats that number classes (YOLO, COCO categories).

    The model's labels first; ids beyond them take the name seen on a detection (or a semantic
    mask), else `class N`, so the index of a name is always its class id.
    """
    seen: dict[int, str] = {}
    for image in images:
        for class_id, label in image.class_labels().items():
            seen.setdefault(class_id, label)
    return names_by_id(seen, labels)


def names_by_id(seen: dict[int, str], labels: Sequence[str] = ()) -> list[str]:
    """`labels`, extended to the highest class id seen (its name as seen, else `class N`)."""
    names = list(labels)
    top = max(seen, default=-1)
    for class_id in range(len(names), top + 1):
        names.append(seen.get(class_id, f"class {class_id}"))
    return names


class StemBook:
    """Hands out stems no other image of the export uses (`x`, then `x_2`, `x_3`...): two
    files named alike opened from different places never overwrite each other's output.
    Thread-safe (the command line writes from the session's worker threads)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._lock = threading.Lock()

    def claim(self, stem: str) -> str:
        with self._lock:
            candidate, n = stem, 2
            while candidate.casefold() in self._taken:  # case-insensitive file systems too
                candidate, n = f"{stem}_{n}", n + 1
            self._taken.add(candidate.casefold())
            return candidate
