"""Pascal VOC XML as ground truth: one file per image (`Annotations/` + `JPEGImages/`, side
by side, or a folder of XML files with --images DIR), an `object` per box with `name` and
`bndbox`. VOC pixels are 1-based and inclusive: xmin becomes x1 = xmin - 1, xmax stays the
exclusive x2 (the inverse of the product's export). `difficult` objects are ignored regions
(COCO's iscrowd): a detection on one is neither right nor wrong, as in VOC's own evaluation.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from app.evaluation.datasets.images import ImageIndex, display_name, outside_problem, walk_files
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
from app.system.bounded_read import MAX_LABEL_FILE_BYTES, BoundedReadError, read_bytes


def read_voc(root: Path, images_dir: Path | None = None, allow_outside: bool = False) -> Dataset:
    xml_root = root / "Annotations" if (root / "Annotations").is_dir() else root
    files = walk_files(xml_root, {".xml"})
    if not files:
        raise DatasetError(f"{xml_root}: no .xml annotation files")
    folders = [f for f in (images_dir, root / "JPEGImages", root, xml_root) if f is not None]
    index = ImageIndex(folders, allow_outside)
    problems: list[Problem] = []
    images: list[GroundTruthImage] = []
    names: dict[str, None] = {}
    for xml in files:
        file = str(xml)
        try:
            node = ET.fromstring(read_bytes(xml, MAX_LABEL_FILE_BYTES))
        except ET.ParseError as e:
            line, column = e.position
            problems.append(
                Problem(
                    file,
                    f"line {line}, column {column}",
                    UNREADABLE,
                    f"not valid XML ({e}); image left out",
                    0,
                    True,
                )
            )
            continue
        except BoundedReadError as e:
            reason = str(e).removeprefix(f"{file}: ")  # the problem names the file already
            problems.append(Problem(file, None, UNREADABLE, f"{reason}; image left out", 0, True))
            continue
        if node.tag != "annotation":
            problems.append(
                Problem(
                    file,
                    "<annotation>",
                    UNREADABLE,
                    f"root element is <{node.tag}>, not <annotation>",
                    0,
                    True,
                )
            )
            continue
        rel = xml.relative_to(xml_root).with_suffix("")
        path = _image_path(node, rel, index, file, problems)
        objects: list[GroundTruthObject] = []
        for i, obj in enumerate(node.findall("object"), start=1):
            parsed, error = _object(obj, f"object {i}")
            if parsed is None:
                problems.append(Problem(file, f"object {i}", MALFORMED, error))
            else:
                objects.append(parsed)
                names.setdefault(parsed.label)
        if path is None:
            filename = (node.findtext("filename") or rel.name).strip()
            problems.append(
                Problem(
                    file, "<filename>", MISSING_IMAGE, f"image {filename!r} not found", len(objects), True
                )
            )
            continue
        image = GroundTruthImage(path, display_name(path, folders), file, objects)
        image.width, image.height = _size(node)
        images.append(image)
    return Dataset(str(root), DatasetFormat.VOC, images, list(names), problems)


def _image_path(
    node: ET.Element, rel: Path, index: ImageIndex, file: str, problems: list[Problem]
) -> Path | None:
    given = (node.findtext("path") or "").strip()
    # labelImg writes the absolute path of the image it labelled, often on another machine (not
    # there: looked for by name, without a word); one that is there outside the dataset is a
    # file of the label file's choosing: named, and read only with --allow-outside-paths.
    if given and Path(given).is_absolute() and Path(given).is_file():
        if not index.escapes(given):
            return Path(given)
        problems.append(outside_problem(file, "<path>", "<path>", given, index))
        if index.allow_outside:
            return Path(given)
    filename = (node.findtext("filename") or "").strip()
    if filename and index.escapes(filename):
        problems.append(outside_problem(file, "<filename>", "<filename>", filename, index))
    if filename:
        found = index.find(str(rel.parent / filename)) or index.find(filename)
        if found is not None:
            return found
    return index.find(rel.as_posix())


def _size(node: ET.Element) -> tuple[int | None, int | None]:
    try:
        w = int(float(node.findtext("size/width") or ""))
        h = int(float(node.findtext("size/height") or ""))
    except ValueError:
        return None, None
    return (w, h) if w > 0 and h > 0 else (None, None)


def _object(obj: ET.Element, where: str) -> tuple[GroundTruthObject | None, str]:
    name = (obj.findtext("name") or "").strip()
    if not name:
        return None, "<name> is missing or empty"
    box = obj.find("bndbox")
    if box is None:
        return None, f"{name!r}: <bndbox> is missing"
    values: list[float] = []
    for tag in ("xmin", "ymin", "xmax", "ymax"):
        text = (box.findtext(tag) or "").strip()
        try:
            value = float(text)
        except ValueError:
            return None, f"{name!r}: <bndbox><{tag}> {text!r} is not a number"
        if not math.isfinite(value):
            return None, f"{name!r}: <bndbox><{tag}> {text!r} is not a number"
        values.append(value)
    xmin, ymin, xmax, ymax = values
    if xmax < xmin or ymax < ymin:
        return None, f"{name!r}: xmax/ymax smaller than xmin/ymin"
    difficult = (obj.findtext("difficult") or "0").strip() in ("1", "true", "True")
    return GroundTruthObject(name, where, box=(xmin - 1, ymin - 1, xmax, ymax), crowd=difficult), ""
