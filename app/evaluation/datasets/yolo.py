"""YOLO labels as ground truth: one `stem.txt` per image, one object per line, coordinates
normalised to the image size: `class cx cy w h` (detection), `class x1 y1 x2 y2 ...`
(segmentation polygon), `class cx cy w h x1 y1 [v1] ...` (pose, K keypoints of D values).

Layouts: `images/` + `labels/` (Ultralytics: the last `images` folder of a path becomes
`labels`), labels beside the images, or a folder of labels with `--images DIR` (what `infer
--format yolo` writes). Class names from `data.yaml` (`names`, and `kpt_shape` for pose) or
`classes.txt`; without either, class ids are the model's. An image without a label file has
no objects (Ultralytics' rule); an empty label file too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from app.evaluation.datasets.data_yaml import read_data_yaml
from app.evaluation.datasets.images import ImageIndex, walk_names
from app.evaluation.datasets.model import (
    MALFORMED,
    MISSING_IMAGE,
    UNREADABLE,
    Dataset,
    DatasetError,
    DatasetFormat,
    GroundTruthImage,
    GroundTruthObject,
    Problem,
)
from app.system.bounded_read import (
    MAX_LABEL_FILE_BYTES,
    MAX_SMALL_FILE_BYTES,
    BoundedReadError,
    check_file,
    read_text,
)

CLASSES_FILES = ("classes.txt",)
DATA_YAML = ("data.yaml", "dataset.yaml")
SNIFF_BYTES = 4096  # read of a .txt to tell a label file from notes.txt
SNIFF_LINES = 5
# YOLO coordinates are fractions of the image's size; one beyond this is not a coordinate (and
# 1e308 times a width would overflow to inf).
COORDINATE_RANGE = (-1.0, 2.0)


def in_label_syntax(path: str | os.PathLike[str]) -> bool:
    """A .txt whose first lines are YOLO label lines (a class id, then at least 4 numbers):
    `notes.txt` or a README is not a label file. An empty file is no evidence either way (False)."""
    try:
        check_file(path, MAX_LABEL_FILE_BYTES)  # a FIFO named *.txt would block the read
        with open(path, encoding="utf-8") as f:
            text = f.read(SNIFF_BYTES)
    except (OSError, UnicodeDecodeError, BoundedReadError):
        return False
    lines = text.splitlines()
    if len(text) == SNIFF_BYTES and lines:  # the last line may be cut (a long polygon): its end dropped
        lines[-1] = lines[-1].rsplit(maxsplit=1)[0] if len(lines[-1].split()) > 1 else ""
    shown = [line for line in lines if line.strip()][:SNIFF_LINES]
    return bool(shown) and all(_label_line_syntax(line) for line in shown)


def _label_line_syntax(line: str) -> bool:
    tokens = line.split()
    if len(tokens) < 5 or not all(_is_float(t) for t in tokens):
        return False
    cls = float(tokens[0])  # "0" or "0.0": a class id either way (parse_line's rule)
    return cls >= 0 and cls.is_integer()


def _names_file(folders: Sequence[Path], candidates: Sequence[str]) -> Path | None:
    for folder in folders:
        for name in candidates:
            if (folder / name).is_file():
                return folder / name
    return None


def class_names(
    root: Path, labels: Path | None, model_labels: Sequence[str]
) -> tuple[list[str], tuple[int, int] | None, list[Problem]]:
    """Names by class id, kpt_shape (from data.yaml), and a note when the names are the model's."""
    folders = [f for f in (root, labels, root.parent) if f is not None]
    yaml_file = root if root.is_file() else _names_file(folders, DATA_YAML)
    names: list[str] | None = None
    kpt_shape = None
    if yaml_file is not None:
        try:
            names, kpt_shape = read_data_yaml(yaml_file)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise DatasetError(str(e) if isinstance(e, ValueError) else f"{yaml_file}: {e}") from None
    if names is None and (txt := _names_file(folders, CLASSES_FILES)) is not None:
        try:
            text = read_text(txt, MAX_SMALL_FILE_BYTES)
        except BoundedReadError as e:
            raise DatasetError(str(e)) from None
        names = [line.strip() for line in text.splitlines() if line.strip()]
    if names is None:
        note = Problem(
            str(root), None, "note", "no data.yaml or classes.txt: class ids are taken as the model's", 0
        )
        return list(model_labels), kpt_shape, [note]
    return names, kpt_shape, []


def _mirror(stem: str) -> str | None:
    """Ultralytics' label path (of an image's absolute path without suffix): the last
    `images` folder of the path becomes `labels`."""
    marker = f"{os.sep}images{os.sep}"
    head, found, tail = stem.rpartition(marker)
    return f"{head}{os.sep}labels{os.sep}{tail}.txt" if found else None


def read_yolo(
    root: Path,
    images_dir: Path | None = None,
    model_labels: Sequence[str] = (),
    model_keypoints: int | None = None,
) -> Dataset:
    label_root = root.parent if root.is_file() else root  # a data.yaml given as the dataset
    labels_dir = label_root / "labels" if (label_root / "labels").is_dir() else None
    names, kpt_shape, problems = class_names(root, labels_dir, model_labels)
    if images_dir is not None:
        image_root = images_dir
    elif (label_root / "images").is_dir():
        image_root = label_root / "images"
    else:
        image_root = label_root
    index = ImageIndex([image_root])
    if not index.images:
        raise DatasetError(f"{image_root}: no images found (give the images' folder with --images DIR)")
    # Every .txt under the labels' and the images' folders, listed once (no stat per image);
    # paths as absolute strings (thousands of them: no pathlib objects).
    label_files = walk_names(label_root, {".txt"})
    if not _inside(image_root, label_root):
        label_files += walk_names(image_root, {".txt"})
    known = set(label_files)
    roots = [os.path.abspath(label_root)] + ([os.path.abspath(labels_dir)] if labels_dir is not None else [])
    used: set[str] = set()
    images: list[GroundTruthImage] = []
    image_prefix = len(os.path.abspath(image_root).rstrip(os.sep)) + 1
    for path in index.images:
        text = str(path)
        stem = os.path.splitext(text)[0]
        rel_stem = stem[image_prefix:]
        candidates = [
            _mirror(stem),
            stem + ".txt",
            *(os.path.join(root, rel_stem + ".txt") for root in roots),
        ]
        label = next((c for c in candidates if c is not None and c in known), None)
        image = GroundTruthImage(path, text[image_prefix:].replace(os.sep, "/"), label, normalized=True)
        if label is not None:
            used.add(label)
            if not _read_label(label, image, names, kpt_shape, model_keypoints, problems):
                continue
        images.append(image)
    orphans = 0
    for label in label_files:
        # Not named like an image and not in label syntax (notes.txt): not a label file at all.
        if os.path.basename(label) in CLASSES_FILES or label in used or not in_label_syntax(label):
            continue
        orphans += 1
        lines = _count_lines(label)
        if lines is None:
            continue
        problems.append(
            Problem(
                str(label),
                None,
                MISSING_IMAGE,
                f"no image named like this label file in {image_root}",
                lines,
                True,
            )
        )
    if not used:
        unmatched = f": {orphans} label file(s) name no image there" if orphans else ""
        raise DatasetError(
            f"{label_root}: no labels found (no YOLO .txt label file named like an image in "
            f"{image_root}{unmatched}; give the images' folder with --images DIR)"
        )
    return Dataset(str(root), DatasetFormat.YOLO, images, names, problems)


def _inside(folder: Path, root: Path) -> bool:
    return os.path.abspath(folder).startswith(os.path.abspath(root) + os.sep) or os.path.abspath(
        folder
    ) == os.path.abspath(root)


def _count_lines(path: str) -> int | None:
    try:
        return sum(1 for line in read_text(path, MAX_LABEL_FILE_BYTES).splitlines() if line.strip())
    except BoundedReadError:
        return None


def _read_label(
    label: str,
    image: GroundTruthImage,
    names: Sequence[str],
    kpt_shape: tuple[int, int] | None,
    model_keypoints: int | None,
    problems: list[Problem],
) -> bool:
    """Parse one label file into `image`; False when the file cannot be read at all."""
    file = label
    try:
        text = read_text(label, MAX_LABEL_FILE_BYTES)
    except BoundedReadError as e:
        reason = str(e).removeprefix(f"{label}: ")  # the problem names the file already
        problems.append(Problem(file, None, UNREADABLE, f"{reason}; image left out", 0, True))
        return False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj, error = parse_line(line, f"line {number}", names, kpt_shape, model_keypoints)
        if obj is None:
            problems.append(Problem(file, f"line {number}", MALFORMED, error))
        else:
            image.objects.append(obj)
    return True


def parse_line(
    line: str,
    where: str,
    names: Sequence[str],
    kpt_shape: tuple[int, int] | None,
    model_keypoints: int | None,
) -> tuple[GroundTruthObject | None, str]:
    tokens = line.split()
    try:
        values = [float(t) for t in tokens]
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        return None, f"{bad!r} is not a number: {line.strip()!r}"
    # Each value on its own: fsum of two 1e308 raises OverflowError, it does not give inf.
    if not all(math.isfinite(v) for v in values):
        return None, f"not a finite number: {line.strip()!r}"
    low, high = COORDINATE_RANGE
    if not all(low <= v <= high for v in values[1:]):
        return None, (
            f"a coordinate beyond {low:g}..{high:g} (YOLO coordinates are fractions of the image size): "
            f"{_shortened(line)}"
        )
    cls, rest = values[0], values[1:]
    if cls != int(cls) or cls < 0:
        return None, f"class {tokens[0]!r} is not a class id (0, 1, ...)"
    if int(cls) >= len(names):
        return None, f"class id {int(cls)} has no name (the dataset names {len(names)} classes)"
    label = names[int(cls)]
    n = len(rest)
    shapes = [kpt_shape] if kpt_shape else []
    if model_keypoints:
        shapes += [(model_keypoints, 3), (model_keypoints, 2)]
    if n == 4 or any(n == 4 + k * d for k, d in shapes):
        cx, cy, w, h = rest[:4]
        if w <= 0 or h <= 0:
            return None, f"width and height must be positive: {line.strip()!r}"
        obj = GroundTruthObject(label, where, box=(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
        if n > 4:
            d = next(d for k, d in shapes if n == 4 + k * d)
            obj.keypoints = _keypoints(rest[4:], d)
        return obj, ""
    if n >= 6 and n % 2 == 0:
        xs, ys = rest[0::2], rest[1::2]
        obj = GroundTruthObject(label, where, polygons=[list(rest)])
        obj.box = (min(xs), min(ys), max(xs), max(ys))
        return obj, ""
    return None, (
        f"{n} values after the class: expected 4 (cx cy w h), an even number of at least 6 "
        "(a polygon) or 4 + K x D (pose)"
    )


def _shortened(line: str, limit: int = 120) -> str:
    text = line.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _keypoints(values: Sequence[float], d: int) -> list[float]:
    flat: list[float] = []
    for i in range(0, len(values), d):
        x, y = values[i], values[i + 1]
        v = values[i + 2] if d == 3 else (0.0 if x == 0 and y == 0 else 2.0)
        flat += [x, y, v] if v > 0 else [0.0, 0.0, 0.0]
    return flat


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
