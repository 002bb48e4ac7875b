"""labelme JSON as ground truth: one file per image (`imagePath` relative to it), `shapes`
of type rectangle, polygon, circle (objects) and point (keypoints).

Which shapes make one object: those sharing a `group_id` (and class); without one, the
layout the product's own export writes: a polygon right after a rectangle of the same
label and inside it is that rectangle's mask, and a point labelled `class/keypoint name`
belongs to the last object of that class. Keypoints are ordered by the model's keypoint
names when they match, else in the order first seen.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.evaluation.datasets.images import ImageIndex, display_name, outside_problem, walk_files
from app.evaluation.datasets.model import (
    MALFORMED,
    MISSING_IMAGE,
    UNREADABLE,
    UNSUPPORTED,
    Dataset,
    DatasetError,
    DatasetFormat,
    GroundTruthImage,
    GroundTruthObject,
    Problem,
)
from app.system.bounded_read import MAX_LABEL_FILE_BYTES, BoundedReadError, parse_json, read_bytes

CIRCLE_SIDES = 32  # a circle's polygon (segm)


class _Object:
    def __init__(self, label: str, where: str, group: Any) -> None:
        self.label, self.where, self.group = label, where, group
        self.box: tuple[float, float, float, float] | None = None
        self.polygons: list[list[float]] = []
        self.points: dict[str, tuple[float, float]] = {}
        self.rectangle_only = False


def is_labelme(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("shapes"), list)


def read_labelme(
    root: Path,
    images_dir: Path | None = None,
    keypoint_names: Sequence[str] = (),
    allow_outside: bool = False,
) -> Dataset:
    files = [root] if root.is_file() else walk_files(root, {".json"})
    folder = root.parent if root.is_file() else root
    index = ImageIndex([f for f in (images_dir, folder) if f is not None], allow_outside)
    problems: list[Problem] = []
    parsed: list[tuple[GroundTruthImage, list[_Object]]] = []
    names: dict[str, None] = {}
    seen_points: dict[str, None] = {}
    for file_path in files:
        file = str(file_path)
        try:
            doc = parse_json(read_bytes(file_path, MAX_LABEL_FILE_BYTES), file)
        except json.JSONDecodeError as e:
            where = f"line {e.lineno}, column {e.colno}"
            problems.append(
                Problem(file, where, UNREADABLE, f"not valid JSON ({e.msg}); image left out", 0, True)
            )
            continue
        except (UnicodeDecodeError, BoundedReadError) as e:
            reason = str(e).removeprefix(f"{file}: ")  # the problem names the file already
            problems.append(Problem(file, None, UNREADABLE, f"{reason}; image left out", 0, True))
            continue
        if not is_labelme(doc):
            continue  # another JSON file in the folder (not a labelme file)
        objects = _objects(doc["shapes"], file, problems)
        for obj in objects:
            names.setdefault(obj.label)
            for name in obj.points:
                seen_points.setdefault(name)
        path = _image_path(doc, file_path, index, problems)
        if path is None:
            problems.append(
                Problem(
                    file,
                    "imagePath",
                    MISSING_IMAGE,
                    f"image {doc.get('imagePath')!r} not found",
                    len(objects),
                    True,
                )
            )
            continue
        image = GroundTruthImage(
            path, display_name(path, [folder] + ([images_dir] if images_dir else [])), file
        )
        w, h = doc.get("imageWidth"), doc.get("imageHeight")
        if isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0:
            image.width, image.height = w, h
        parsed.append((image, objects))
    if not files:
        raise DatasetError(f"{root}: no labelme .json files")
    order = _keypoint_order(list(seen_points), keypoint_names)
    images = []
    for image, objects in parsed:
        image.objects = [_finish(obj, order) for obj in objects]
        images.append(image)
    return Dataset(str(root), DatasetFormat.LABELME, images, list(names), problems, order)


def _image_path(
    doc: dict[str, Any], file_path: Path, index: ImageIndex, problems: list[Problem]
) -> Path | None:
    given = doc.get("imagePath")
    if isinstance(given, str) and given:
        candidate = file_path.parent / given.replace("\\", "/")
        outside = index.escapes(given, base=file_path.parent)
        if outside:
            problems.append(outside_problem(str(file_path), "imagePath", "imagePath", given, index))
        if (index.allow_outside or not outside) and candidate.is_file():
            return candidate.resolve()
        found = index.find(Path(given.replace("\\", "/")).name)
        if found is not None:
            return found
    beside = ImageIndex([file_path.parent]).find(file_path.stem) if not given else None
    return beside


def _number_pairs(points: Any) -> list[tuple[float, float]] | None:
    if not isinstance(points, list):
        return None
    pairs = []
    for p in points:
        if not (isinstance(p, list) and len(p) == 2):
            return None
        x, y = p
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)
        ):
            return None
        pairs.append((float(x), float(y)))
    return pairs


def _objects(shapes: list[Any], file: str, problems: list[Problem]) -> list[_Object]:
    objects: list[_Object] = []
    groups: dict[tuple[Any, str], _Object] = {}
    for i, shape in enumerate(shapes):
        where = f"shapes[{i}]"
        if not isinstance(shape, dict) or not isinstance(shape.get("label"), str):
            problems.append(Problem(file, where, MALFORMED, "a shape needs a label"))
            continue
        kind = shape.get("shape_type") or "polygon"
        label, _, part = shape["label"].partition("/")
        label = label.strip()
        points = _number_pairs(shape.get("points"))
        if points is None:
            problems.append(
                Problem(file, where, MALFORMED, f"{shape['label']!r}: points must be [[x, y], ...]")
            )
            continue
        group = shape.get("group_id")
        owner = groups.get((group, label)) if group is not None else None
        if kind == "point":
            if len(points) != 1:
                problems.append(
                    Problem(file, where, MALFORMED, f"{shape['label']!r}: a point needs one [x, y]")
                )
                continue
            if owner is None and group is None and part:
                owner = next((o for o in reversed(objects) if o.label == label), None)
            if owner is None:
                if group is not None:
                    owner = groups[(group, label)] = _Object(label, where, group)
                    objects.append(owner)
                else:
                    problems.append(
                        Problem(
                            file,
                            where,
                            UNSUPPORTED,
                            f"point {shape['label']!r} belongs to no object (give it the object's "
                            "group_id, or a label 'class/keypoint name' after the object)",
                        )
                    )
                    continue
            owner.points[part.strip() or f"keypoint {len(owner.points)}"] = points[0]
            continue
        shape_box, polygon, error = _geometry(kind, points)
        if error:
            problems.append(Problem(file, where, UNSUPPORTED if kind not in _KINDS else MALFORMED, error))
            continue
        if owner is None and group is None and kind == "polygon" and objects:
            last = objects[-1]
            if last.label == label and last.rectangle_only and _inside(polygon, last.box):
                owner = last
        if owner is None:
            owner = _Object(label, where, group)
            objects.append(owner)
            if group is not None:
                groups[(group, label)] = owner
            owner.rectangle_only = kind == "rectangle"
        else:
            owner.rectangle_only = False
        if kind == "rectangle":
            owner.box = shape_box if owner.box is None else owner.box
        else:
            owner.polygons.append(polygon)
            owner.box = owner.box or shape_box
    return objects


_KINDS = ("rectangle", "polygon", "circle")


def _geometry(
    kind: str, points: list[tuple[float, float]]
) -> tuple[tuple[float, float, float, float], list[float], str]:
    empty = (0.0, 0.0, 0.0, 0.0)
    if kind == "rectangle":
        if len(points) != 2:
            return empty, [], f"a rectangle needs 2 points, got {len(points)}"
        (xa, ya), (xb, yb) = points
        box = (min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb))
        x1, y1, x2, y2 = box
        return box, [x1, y1, x2, y1, x2, y2, x1, y2], ""
    if kind == "polygon":
        if len(points) < 3:
            return empty, [], f"a polygon needs at least 3 points, got {len(points)}"
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return (min(xs), min(ys), max(xs), max(ys)), [v for p in points for v in p], ""
    if kind == "circle":
        if len(points) != 2:
            return empty, [], f"a circle needs 2 points (centre, a point on it), got {len(points)}"
        (cx, cy), (px, py) = points
        r = math.hypot(px - cx, py - cy)
        polygon = []
        for k in range(CIRCLE_SIDES):
            a = 2 * math.pi * k / CIRCLE_SIDES
            polygon += [cx + r * math.cos(a), cy + r * math.sin(a)]
        return (cx - r, cy - r, cx + r, cy + r), polygon, ""
    return empty, [], f"shape_type {kind!r} is not evaluated (rectangle, polygon, circle and point are)"


def _inside(polygon: list[float], box: tuple[float, float, float, float] | None, slack: float = 2.0) -> bool:
    if box is None:
        return False
    x1, y1, x2, y2 = box
    xs, ys = polygon[0::2], polygon[1::2]
    return min(xs) >= x1 - slack and min(ys) >= y1 - slack and max(xs) <= x2 + slack and max(ys) <= y2 + slack


def _keypoint_order(seen: list[str], model_names: Sequence[str]) -> list[str]:
    if not seen:
        return []
    lowered = {n.casefold(): n for n in model_names}
    if model_names and all(s.casefold() in lowered or s.startswith("keypoint ") for s in seen):
        return list(model_names)
    numbered = [s for s in seen if s.startswith("keypoint ") and s[9:].isdigit()]
    if numbered and len(numbered) == len(seen):
        top = max(int(s[9:]) for s in numbered)
        return [f"keypoint {i}" for i in range(top + 1)]
    return seen


def _finish(obj: _Object, order: Sequence[str]) -> GroundTruthObject:
    out = GroundTruthObject(obj.label, obj.where, box=obj.box, polygons=obj.polygons or None)
    if obj.points:
        lowered = {name.casefold(): xy for name, xy in obj.points.items()}
        flat: list[float] = []
        for i, name in enumerate(order):
            xy = lowered.get(name.casefold()) or lowered.get(f"keypoint {i}")
            flat += [xy[0], xy[1], 2.0] if xy is not None else [0.0, 0.0, 0.0]
        out.keypoints = flat
    return out
