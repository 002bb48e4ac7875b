"""COCO JSON as ground truth: `images` (file names, sizes), `categories` (names, keypoint
names), `annotations` (bbox, segmentation as polygons or RLE, keypoints, iscrowd, area).
Images are looked for with --images DIR, beside the JSON file, then in its `images/` folder."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from app.evaluation.datasets.images import ImageIndex, outside_problem
from app.evaluation.datasets.model import (
    DUPLICATE_ID,
    MALFORMED,
    MISSING_IMAGE,
    Dataset,
    DatasetError,
    DatasetFormat,
    GroundTruthImage,
    GroundTruthObject,
    Problem,
)
from app.system.bounded_read import MAX_DATASET_FILE_BYTES, BoundedReadError, parse_json, read_bytes


def looks_like_coco(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("images"), list) and "annotations" in doc


def load_json(path: Path) -> Any:
    """The parsed file; DatasetError naming the file, line and column when it is not JSON."""
    try:
        return parse_json(read_bytes(path, MAX_DATASET_FILE_BYTES), str(path))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except BoundedReadError as e:
        raise DatasetError(str(e)) from None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def read_coco(path: Path, images_dir: Path | None = None, allow_outside: bool = False) -> Dataset:
    doc = load_json(path)
    if isinstance(doc, list):
        raise DatasetError(f"{path}: a list of COCO results (detections), not a dataset with images")
    if not looks_like_coco(doc):
        raise DatasetError(f"{path}: not a COCO dataset (no 'images' and 'annotations' lists)")
    file = str(path)
    problems: list[Problem] = []
    categories: dict[Any, str] = {}
    keypoint_names: list[str] = []
    for i, cat in enumerate(doc.get("categories") or []):
        if not isinstance(cat, dict) or "id" not in cat or not isinstance(cat.get("name"), str):
            problems.append(Problem(file, f"categories[{i}]", MALFORMED, "needs an id and a name", 0))
            continue
        categories[cat["id"]] = cat["name"]
        if isinstance(cat.get("keypoints"), list) and not keypoint_names:
            keypoint_names = [str(k) for k in cat["keypoints"]]
    folders = [p for p in (images_dir, path.parent, path.parent / "images") if p is not None]
    index = ImageIndex(folders, allow_outside)
    images: dict[Any, GroundTruthImage] = {}
    first_entry: dict[Any, int] = {}
    missing: set[Any] = set()
    for i, entry in enumerate(doc["images"]):
        name = entry.get("file_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or "id" not in entry:
            problems.append(Problem(file, f"images[{i}]", MALFORMED, "needs an id and a file_name", 0))
            continue
        image_id = entry["id"]
        if not isinstance(image_id, int | float | str) or isinstance(image_id, bool):
            message = f"id {image_id!r} is not a number or a string"
            problems.append(Problem(file, f"images[{i}]", MALFORMED, message, 0, True))
            continue
        if image_id in first_entry:
            j = first_entry[image_id]
            message = (
                f"image id {image_id!r} of {name!r} is the id of images[{j}] ({images[image_id].name!r}) "
                "already: this image is left out (its id's annotations go to the first)"
            )
            problems.append(Problem(file, f"images[{i}]", DUPLICATE_ID, message, 0, True))
            continue
        first_entry[image_id] = i
        if index.escapes(name):
            problems.append(outside_problem(file, f"images[{i}]", "file_name", name, index))
        found = index.find(name)
        if found is None:
            missing.add(entry["id"])
        image_path = found if found is not None else (images_dir or path.parent) / name
        width, height = entry.get("width"), entry.get("height")
        images[entry["id"]] = GroundTruthImage(
            image_path,
            name,
            file,
            width=int(width) if _number(width) else None,
            height=int(height) if _number(height) else None,
        )
    for i, ann in enumerate(doc["annotations"] or []):
        where = f"annotations[{i}]"
        if not isinstance(ann, dict):
            problems.append(Problem(file, where, MALFORMED, "not an object"))
            continue
        image = images.get(ann.get("image_id"))
        if image is None:
            problems.append(
                Problem(file, where, MALFORMED, f"image_id {ann.get('image_id')!r} is not an image")
            )
            continue
        label = categories.get(ann.get("category_id"))
        if label is None:
            problems.append(
                Problem(file, where, MALFORMED, f"category_id {ann.get('category_id')!r} is not a category")
            )
            continue
        obj, error = _object(ann, label, where)
        if obj is None:
            problems.append(Problem(file, where, MALFORMED, error))
            continue
        image.objects.append(obj)
    names = list(dict.fromkeys(categories.values()))
    for image_id in sorted(missing, key=_id_order):
        image = images.pop(image_id)
        where = f"images[id {image_id}]"
        searched = ", ".join(str(f) for f in index.folders) or str(path.parent)
        message = f"image {image.name!r} not found (looked in {searched}; give the folder with --images)"
        problems.append(Problem(file, where, MISSING_IMAGE, message, len(image.objects), True))
    # In image id order, as pycocotools evaluates them (detections with equal scores are
    # ranked in that order, so it changes AP when scores tie).
    ordered = [images[k] for k in sorted(images, key=_id_order)]
    return Dataset(str(path), DatasetFormat.COCO, ordered, names, problems, keypoint_names)


def _id_order(image_id: Any) -> tuple[int, Any]:
    return (0, image_id) if isinstance(image_id, int | float) else (1, str(image_id))


def _object(ann: dict[str, Any], label: str, where: str) -> tuple[GroundTruthObject | None, str]:
    obj = GroundTruthObject(label, where, crowd=bool(ann.get("iscrowd", 0)))
    bbox = ann.get("bbox")
    if bbox is not None and bbox != []:
        if not (isinstance(bbox, list) and len(bbox) == 4 and all(_number(v) for v in bbox)):
            return None, f"bbox {bbox!r}: expected [x, y, width, height] numbers"
        x, y, w, h = (float(v) for v in bbox)
        if w <= 0 or h <= 0:
            return None, f"bbox {bbox!r}: width and height must be positive"
        obj.box = (x, y, x + w, y + h)
    seg = ann.get("segmentation")
    if isinstance(seg, dict):
        if "counts" not in seg or "size" not in seg:
            return None, "segmentation: an RLE needs 'size' and 'counts'"
        obj.rle = seg
    elif isinstance(seg, list) and seg:
        polygons = [p for p in seg if isinstance(p, list)]
        if len(polygons) != len(seg) or any(
            len(p) < 6 or len(p) % 2 or not all(map(_number, p)) for p in seg
        ):
            return None, "segmentation: expected polygons [x1, y1, x2, y2, ...] of at least 3 points"
        obj.polygons = [[float(v) for v in p] for p in polygons]
    kps = ann.get("keypoints")
    if isinstance(kps, list) and kps:
        if len(kps) % 3 or not all(_number(v) for v in kps):
            return None, "keypoints: expected [x, y, v] numbers per keypoint"
        obj.keypoints = [float(v) for v in kps]
    if _number(ann.get("area")):
        obj.area = float(ann["area"])
    if obj.box is None and obj.polygons is None and obj.rle is None and obj.keypoints is None:
        return None, "no bbox, segmentation or keypoints"
    return obj, ""
