"""Labelled datasets as ground truth, in the formats the product exports: COCO JSON, YOLO,
Pascal VOC, labelme. `load_dataset` tells the format from the path (or takes `fmt`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from app.evaluation.datasets.coco import load_json, looks_like_coco, read_coco
from app.evaluation.datasets.images import walk_files
from app.evaluation.datasets.labelme import is_labelme, read_labelme
from app.evaluation.datasets.model import (
    Dataset,
    DatasetError,
    DatasetFormat,
    GroundTruthImage,
    GroundTruthObject,
    Problem,
)
from app.evaluation.datasets.voc import read_voc
from app.evaluation.datasets.yolo import CLASSES_FILES, DATA_YAML, in_label_syntax, read_yolo

FORMATS = tuple(f.value for f in DatasetFormat)  # as `evaluate --format` spells them
JSON_SNIFFED = 20  # JSON files looked into to tell COCO from labelme

__all__ = [
    "FORMATS",
    "Dataset",
    "DatasetError",
    "DatasetFormat",
    "GroundTruthImage",
    "GroundTruthObject",
    "Problem",
    "detect_format",
    "load_dataset",
]


def _json_kind(path: Path) -> DatasetFormat | None:
    try:
        doc = load_json(path)  # bounded: a FIFO or a 100k-deep file is not a dataset
    except DatasetError:
        return None
    if looks_like_coco(doc):
        return DatasetFormat.COCO
    if is_labelme(doc):
        return DatasetFormat.LABELME
    return None


def _coco_file(folder: Path) -> Path | None:
    candidates = [p for p in sorted(folder.glob("*.json")) + sorted(folder.glob("annotations/*.json"))]
    found = [p for p in candidates[:JSON_SNIFFED] if _json_kind(p) is DatasetFormat.COCO]
    if len(found) > 1:
        listed = ", ".join(str(p) for p in found)
        raise DatasetError(f"{folder}: several COCO files ({listed}); give the one to evaluate against")
    return found[0] if found else None


def _label_files(folder: Path) -> bool:
    """Some .txt of the folder is in YOLO label syntax (a few looked into; notes.txt is not)."""
    texts = (p for p in sorted(folder.glob("*.txt")) if p.name not in CLASSES_FILES)
    return any(in_label_syntax(p) for p in itertools.islice(texts, JSON_SNIFFED))


def detect_format(path: Path) -> tuple[DatasetFormat, Path]:
    """(format, the path to read: a COCO folder resolves to its JSON file)."""
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".json":
            kind = _json_kind(path)
            if kind is None:
                raise DatasetError(f"{path}: neither a COCO dataset nor a labelme file")
            return kind, path
        if suffix in (".yaml", ".yml"):
            return DatasetFormat.YOLO, path
        raise DatasetError(f"{path}: a dataset is a COCO .json file, a data.yaml, or a folder")
    found: list[DatasetFormat] = []
    if (path / "Annotations").is_dir() or any(path.glob("*.xml")):
        found.append(DatasetFormat.VOC)
    jsons = walk_files(path, {".json"})
    if any(_json_kind(p) is DatasetFormat.LABELME for p in jsons[:JSON_SNIFFED]):
        found.append(DatasetFormat.LABELME)
    coco = _coco_file(path)
    if coco is not None:
        found.append(DatasetFormat.COCO)
    names = CLASSES_FILES + DATA_YAML
    if (path / "labels").is_dir() or any((path / n).is_file() for n in names) or _label_files(path):
        found.append(DatasetFormat.YOLO)
    if not found and walk_files(path, {".xml"}):
        found.append(DatasetFormat.VOC)
    if not found:
        raise DatasetError(
            f"{path}: no labels found (COCO .json, YOLO .txt with classes.txt or data.yaml, VOC .xml, "
            "labelme .json)"
        )
    if len(found) > 1:
        raise DatasetError(
            f"{path}: looks like {' and '.join(found)}; choose with --format {{{','.join(found)}}}"
        )
    return found[0], coco if found[0] is DatasetFormat.COCO and coco is not None else path


def load_dataset(
    path: str | Path,
    fmt: DatasetFormat | str | None = None,
    images_dir: str | Path | None = None,
    *,
    model_labels: Sequence[str] = (),
    keypoint_names: Sequence[str] = (),
    allow_outside_paths: bool = False,
) -> Dataset:
    """Read a dataset. `model_labels` name YOLO class ids when the dataset does not;
    `keypoint_names` (the model's) order labelme points and tell YOLO pose lines' length.
    An image path a label file gives outside the dataset's folder and `images_dir` is named
    (a problem of kind OUTSIDE_PATH) and not read unless `allow_outside_paths`.
    DatasetError when the dataset as a whole cannot be used; problems with single files
    are in `Dataset.problems`."""
    root = Path(path)
    images = Path(images_dir) if images_dir is not None else None
    if images is not None and not images.is_dir():
        raise DatasetError(f"--images {images}: no such folder")
    if fmt is None:
        fmt, root = detect_format(root)
    elif fmt not in FORMATS:
        raise DatasetError(f"unknown dataset format {fmt!r} (one of {', '.join(FORMATS)})")
    else:
        fmt = DatasetFormat(fmt)  # as the command line or the viewer's dialog spell it
        if not root.exists():
            raise DatasetError(f"{root}: no such file or folder")
    if fmt is DatasetFormat.COCO and root.is_dir():
        coco = _coco_file(root)
        if coco is None:
            raise DatasetError(f"{root}: no COCO .json file in this folder")
        root = coco
    if fmt is DatasetFormat.COCO:
        dataset = read_coco(root, images, allow_outside_paths)
    elif fmt is DatasetFormat.YOLO:
        dataset = read_yolo(root, images, model_labels, len(keypoint_names) or None)
    elif fmt is DatasetFormat.VOC:
        dataset = read_voc(root, images, allow_outside_paths)
    else:
        dataset = read_labelme(root, images, keypoint_names, allow_outside_paths)
    _drop_repeats(dataset)
    if not dataset.images:
        problems = "; ".join(p.text() for p in dataset.problems[:3])
        raise DatasetError(f"{root}: no usable labelled images" + (f" ({problems})" if problems else ""))
    return dataset


def _drop_repeats(dataset: Dataset) -> None:
    """An image named by two label files keeps the first one's labels (the other is reported)."""
    seen: dict[str, GroundTruthImage] = {}
    kept: list[GroundTruthImage] = []
    for image in dataset.images:
        key = os.path.abspath(image.path)  # no resolve(): a syscall per image
        first = seen.get(key)
        if first is None:
            seen[key] = image
            kept.append(image)
            continue
        dataset.problems.append(
            Problem(
                image.label_file or str(image.path),
                None,
                "image labelled twice",
                f"{image.path} is labelled by {first.label_file} already; these labels are not used",
                len(image.objects),
            )
        )
    dataset.images = kept
