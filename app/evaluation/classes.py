"""Which dataset class is which model class: by name, case-insensitive, after an optional
class map (`--class-map FILE`: JSON {"dataset name": "model name"} or two columns of text,
`dataset name<TAB or comma>model name`; a model name left empty drops that class).

The evaluated categories are the dataset's classes that name a model class; the others are
listed (their annotations are dropped: the model cannot find them), and so are the model's
classes the dataset does not have (their detections are not evaluated)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.system.bounded_read import MAX_SMALL_FILE_BYTES, BoundedReadError, parse_json, read_text


class ClassMapError(Exception):
    pass


def read_class_map(path: str | Path) -> dict[str, str]:
    """The renames of a class map file; ClassMapError naming the file and the line."""
    p = Path(path)
    try:
        text = read_text(p, MAX_SMALL_FILE_BYTES, f"--class-map {p}")
    except BoundedReadError as e:
        raise ClassMapError(str(e)) from None
    if text.lstrip().startswith("{"):
        try:
            doc = parse_json(text, f"--class-map {p}")
        except BoundedReadError as e:
            raise ClassMapError(str(e)) from None
        except json.JSONDecodeError as e:
            raise ClassMapError(
                f"--class-map {p}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
            ) from None
        if not isinstance(doc, dict):
            shape = '{"dataset name": "model name"}'
            raise ClassMapError(f"--class-map {p}: a JSON class map is an object {shape}")
        bad = [k for k, v in doc.items() if not isinstance(v, str | type(None))]
        if bad:
            raise ClassMapError(f"--class-map {p}: the value of {bad[0]!r} must be a class name (or null)")
        return {str(k): v or "" for k, v in doc.items()}
    renames: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = line.split("\t") if "\t" in line else next(csv.reader(io.StringIO(line)))
        if len(row) != 2:
            raise ClassMapError(
                f"--class-map {p} (line {number}): expected two columns 'dataset name, model name', "
                f"got {line!r}"
            )
        renames[row[0].strip()] = row[1].strip()
    return renames


@dataclass
class ClassMatch:
    """The evaluated categories (model class names, in the model's order) and what maps to them."""

    categories: list[str]  # category i has COCO id i + 1
    dataset_to_category: dict[str, int]  # dataset class name (as written) -> category index
    model_to_category: dict[str, int]  # model label, case-folded -> category index
    unmatched_dataset: list[str] = field(default_factory=list)  # dataset classes naming no model class
    dropped_by_map: list[str] = field(default_factory=list)  # dataset classes the class map drops
    model_only: list[str] = field(default_factory=list)  # model classes the dataset does not have

    def category_of_detection(self, label: str) -> int | None:
        return self.model_to_category.get(label.casefold())


def match_classes(
    dataset_names: Sequence[str], model_labels: Sequence[str], class_map: Mapping[str, str] | None = None
) -> ClassMatch:
    renames = {k.casefold(): v for k, v in (class_map or {}).items()}
    model_index: dict[str, int] = {}
    for i, label in enumerate(model_labels):
        model_index.setdefault(label.casefold(), i)
    wanted: dict[str, int] = {}  # dataset name -> model class index
    unmatched: list[str] = []
    dropped: list[str] = []
    for name in dataset_names:
        target = renames.get(name.casefold(), name)
        if not target:
            dropped.append(name)
            continue
        index = model_index.get(target.casefold())
        if index is None:
            unmatched.append(name)
        else:
            wanted[name] = index
    used = sorted(set(wanted.values()))
    categories = [model_labels[i] for i in used]
    position = {model_index_: k for k, model_index_ in enumerate(used)}
    model_to_category = {model_labels[i].casefold(): position[i] for i in used}
    seen = set(used)
    model_only = [label for i, label in enumerate(model_labels) if i not in seen]
    return ClassMatch(
        categories,
        {name: position[i] for name, i in wanted.items()},
        model_to_category,
        unmatched,
        dropped,
        model_only,
    )
