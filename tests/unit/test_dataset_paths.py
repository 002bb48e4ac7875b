"""Label files name their images; one that names a file outside the dataset's folder (and
--images) is named and counted, and the file is not read unless --allow-outside-paths. A
duplicate COCO image id is named and counted (it used to drop one of the two images silently)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from app.evaluation.datasets import load_dataset
from app.evaluation.datasets.model import DUPLICATE_ID, OUTSIDE_PATH
from app.evaluation.evaluate import evaluate_results
from app.evaluation.report import dataset_record
from app.inference.result import InferenceResult, Status
from tests.evaluation_data import Img, Obj, write_dataset, write_images

IMAGES = [
    Img("a.png", 64, 64, [Obj("car", (1, 1, 20, 20))]),
    Img("b.png", 64, 64, [Obj("car", (2, 2, 30, 30))]),
]


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """An image outside every dataset folder of the test (a file a label must not reach)."""
    write_images(tmp_path / "secret", [Img("x.png", 32, 32)])
    return tmp_path / "secret" / "x.png"


def _coco(tmp_path: Path, names: list[str], ids: list[int]) -> Path:
    dataset, _ = write_dataset("coco", tmp_path / "data", IMAGES, ["car"])
    doc = json.loads(dataset.read_text())
    for entry, name, image_id in zip(doc["images"], names, ids, strict=True):
        entry["file_name"], entry["id"] = name, image_id
    dataset.write_text(json.dumps(doc))
    return dataset


def _report(dataset_path: Path, **options: bool) -> tuple[list[str], dict]:  # type: ignore[type-arg]
    dataset = load_dataset(dataset_path, **options)
    results = {i: InferenceResult(f"r{i}", Status.OK, detections=[]) for i in range(len(dataset.images))}
    record = dataset_record(evaluate_results(dataset, results, ["car"]))
    return [str(image.path) for image in dataset.images], record


def test_a_coco_file_name_outside_the_dataset_is_named_and_not_read(tmp_path: Path, secret: Path) -> None:
    for name in ("../../secret/x.png", str(secret)):  # relative, climbing out; absolute
        dataset = _coco(tmp_path, [name, "b.png"], [1, 2])
        paths, record = _report(dataset)
        assert str(secret) not in paths and len(paths) == 1  # x.png is nowhere inside: left out
        assert record["dropped"]["outside_paths"] == 1 and record["dropped"]["images"] == 1
        [problem] = [p for p in record["dropped"]["problems"] if p["kind"] == OUTSIDE_PATH]
        assert problem["where"] == "images[0]" and name in problem["message"]
        assert "not read (--allow-outside-paths reads it)" in problem["message"]
        paths, record = _report(dataset, allow_outside_paths=True)
        assert [Path(p).resolve() for p in paths] == [secret, (tmp_path / "data" / "images" / "b.png")]
        assert record["dropped"]["outside_paths"] == 1  # still named and counted
        assert "read (--allow-outside-paths)" in record["dropped"]["problems"][0]["message"]


def test_an_outside_name_is_looked_for_by_its_bare_name_inside(tmp_path: Path) -> None:
    dataset = _coco(tmp_path, ["../../elsewhere/a.png", "b.png"], [1, 2])
    paths, record = _report(dataset)
    assert [Path(p).name for p in paths] == ["a.png", "b.png"]
    assert all(str(tmp_path / "data") in p for p in paths)
    assert record["dropped"]["outside_paths"] == 1 and record["dropped"]["images"] == 0


def test_a_duplicate_coco_image_id_is_named_and_counted(tmp_path: Path) -> None:
    dataset = _coco(tmp_path, ["a.png", "b.png"], [7, 7])
    paths, record = _report(dataset)
    assert [Path(p).name for p in paths] == ["a.png"]
    assert record["dropped"]["duplicate_image_ids"] == 1 and record["dropped"]["images"] == 1
    [problem] = [p for p in record["dropped"]["problems"] if p["kind"] == DUPLICATE_ID]
    assert problem["where"] == "images[1]"
    assert "image id 7 of 'b.png' is the id of images[0] ('a.png') already" in problem["message"]


def test_labelme_and_voc_paths_outside_the_dataset(tmp_path: Path, secret: Path) -> None:
    root, _ = write_dataset("labelme", tmp_path / "lm", IMAGES, ["car"])
    doc = json.loads((root / "a.json").read_text())
    doc["imagePath"] = "../secret/x.png"
    (root / "a.json").write_text(json.dumps(doc))
    dataset = load_dataset(root)
    assert str(secret) not in [str(i.path) for i in dataset.images]
    assert [p.where for p in dataset.problems if p.kind == OUTSIDE_PATH] == ["imagePath"]
    assert secret in [i.path for i in load_dataset(root, allow_outside_paths=True).images]

    root, _ = write_dataset("voc", tmp_path / "voc", IMAGES, ["car"])
    xml = root / "Annotations" / "a.xml"
    tree = ET.parse(xml)
    ET.SubElement(tree.getroot(), "path").text = str(secret)
    tree.write(xml)
    dataset = load_dataset(root)
    # Not read; found by its file name inside instead.
    assert [i.path.name for i in dataset.images] == ["a.png", "b.png"]
    assert [p.where for p in dataset.problems if p.kind == OUTSIDE_PATH] == ["<path>"]
    assert secret in [i.path for i in load_dataset(root, allow_outside_paths=True).images]
    # labelImg's absolute path of another machine (no such file): looked for by name, no word.
    tree.getroot().find("path").text = "/nowhere/a.png"  # type: ignore[union-attr]
    tree.write(xml)
    assert not [p for p in load_dataset(root).problems if p.kind == OUTSIDE_PATH]
    assert np.all([i.path.is_file() for i in load_dataset(root).images])
