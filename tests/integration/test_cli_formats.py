"""`python -m app infer --format {coco,yolo,voc,labelme} --output PATH`: real processes against
the real server; each export is re-read by an independent parser and compared with the
JSON Lines records of the same inputs."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data
from globox import AnnotationSet
from pycocotools import mask as coco_mask
from pycocotools.coco import COCO

from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, parse, run_cli
from tests.media import head_image


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("photos")
    astronaut = bgr(skimage.data.astronaut())
    cv2.imwrite(str(folder / "astronaut.png"), astronaut)
    (folder / "sub" / "deeper").mkdir(parents=True)
    cv2.imwrite(str(folder / "sub" / "deeper" / "astronaut.png"), cv2.resize(astronaut, (300, 300)))
    cv2.imwrite(str(folder / "sub" / "coffee.png"), bgr(skimage.data.coffee()))
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    (folder / "notes.txt").write_text("not an image")
    return folder


@pytest.fixture(scope="module")
def records(triton: EmbeddedServer, photos: Path) -> dict[str, dict[str, Any]]:
    """The JSON Lines records, by path relative to the folder."""
    done = run_cli("infer", "--url", triton.grpc_url, str(photos))
    assert done.returncode == 1, done.stderr  # the corrupt file
    found, _ = parse(done.stdout)
    return {Path(r["source"]).relative_to(photos).as_posix(): r for r in found}


def _boxes(records: dict[str, dict[str, Any]], name: str) -> list[tuple[str, float, float, float, float]]:
    return sorted((d["label"], *(round(v, 1) for v in d["box"])) for d in records[name]["detections"])


def _same(got: list[tuple[Any, ...]], expected: list[tuple[Any, ...]], tol: float) -> bool:
    """Same labels, each coordinate within `tol` (the export rounds to 2 decimals)."""
    return len(got) == len(expected) and all(
        g[0] == e[0] and all(abs(a - b) <= tol for a, b in zip(g[1:], e[1:], strict=True))
        for g, e in zip(got, expected, strict=True)
    )


def _export(triton: EmbeddedServer, fmt: str, out: Path, photos: Path) -> subprocess.CompletedProcess[str]:
    done = run_cli("infer", "--url", triton.grpc_url, "--format", fmt, "--output", str(out), str(photos))
    assert done.returncode == 1, done.stderr
    (summary,) = [json.loads(line)["summary"] for line in done.stdout.splitlines()]
    assert (summary["ok"], summary["failed"], summary["skipped"]) == (3, 1, 1)
    return done


def test_coco_file(triton: EmbeddedServer, photos: Path, records: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "detections.json"
    _export(triton, "coco", out, photos)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(out))
    images = {i["file_name"]: i for i in coco.loadImgs(coco.getImgIds())}
    assert set(images) == {"astronaut.png", "sub/deeper/astronaut.png", "sub/coffee.png"}
    assert (images["sub/deeper/astronaut.png"]["width"], images["sub/deeper/astronaut.png"]["height"]) == (
        300,
        300,
    )
    assert [c["name"] for c in coco.loadCats(coco.getCatIds())] == ["face"]
    for name, image in images.items():
        anns = coco.loadAnns(coco.getAnnIds(imgIds=[image["id"]]))
        got = sorted(
            ("face", *(round(v, 1) for v in (x, y, x + w, y + h))) for x, y, w, h in (a["bbox"] for a in anns)
        )
        assert _same(got, _boxes(records, name), 0.15), (name, got)
    assert len(coco.getAnnIds(imgIds=[images["astronaut.png"]["id"]])) == 1
    assert coco.getAnnIds(imgIds=[images["sub/coffee.png"]["id"]]) == []


def test_yolo_folder(triton: EmbeddedServer, photos: Path, records: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "yolo"
    _export(triton, "yolo", out, photos)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "astronaut.txt", "classes.txt", "sub", "sub/coffee.txt", "sub/deeper", "sub/deeper/astronaut.txt"
    ]  # fmt: skip
    assert (out / "classes.txt").read_text() == "face\n"
    # The face detector gives six landmarks: a YOLO-pose line, box then x, y, visibility each.
    (line,) = (out / "astronaut.txt").read_text().splitlines()
    values = line.split()
    assert len(values) == 5 + 6 * 3 and values[0] == "0"
    cx, cy, w, h = (float(v) * 512 for v in values[1:5])
    got = [("0", round(cx - w / 2, 1), round(cy - h / 2, 1), round(cx + w / 2, 1), round(cy + h / 2, 1))]
    assert _same(got, [("0", *_boxes(records, "astronaut.png")[0][1:])], 0.15), got
    (face,) = records["astronaut.png"]["detections"]
    triples = [values[i : i + 3] for i in range(5, len(values), 3)]
    for (x, y, _score), (nx, ny, v) in zip(face["keypoints"], triples, strict=True):
        assert abs(float(nx) * 512 - x) < 0.01 and abs(float(ny) * 512 - y) < 0.01 and v == "2"
    assert (out / "sub" / "coffee.txt").read_text() == ""


def test_voc_folder(triton: EmbeddedServer, photos: Path, records: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "voc"
    _export(triton, "voc", out, photos)
    # VOC names an image without its folder: one folder at a time (both hold an astronaut.png).
    for folder, name in (("", "astronaut.png"), ("sub/deeper", "sub/deeper/astronaut.png")):
        (annotation,) = AnnotationSet.from_pascal_voc(out / folder)
        assert annotation.image_id == "astronaut.png"
        (box,) = annotation.boxes
        _label, x1, y1, x2, y2 = _boxes(records, name)[0]
        assert box.label == "face"
        assert box.ltrb == (round(x1) + 1, round(y1) + 1, round(x2), round(y2))  # 1-based, inclusive
    (coffee,) = AnnotationSet.from_pascal_voc(out / "sub")
    assert coffee.image_id == "coffee.png" and coffee.boxes == [] and coffee.image_size == (600, 400)


def test_labelme_folder(
    triton: EmbeddedServer, photos: Path, records: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "labelme"
    _export(triton, "labelme", out, photos)
    data = json.loads((out / "sub" / "deeper" / "astronaut.json").read_text())
    assert (
        out / "sub" / "deeper" / data["imagePath"]
    ).resolve() == photos / "sub" / "deeper" / "astronaut.png"
    assert (data["imageWidth"], data["imageHeight"], data["imageData"]) == (300, 300, None)
    for folder, name in (("", "astronaut.png"), ("sub/deeper", "sub/deeper/astronaut.png")):
        (annotation,) = AnnotationSet.from_labelme(out / folder)
        got = sorted((b.label, *(round(v, 1) for v in b.ltrb)) for b in annotation.boxes)
        assert _same(got, _boxes(records, name), 0.15), (name, got)
    (coffee,) = AnnotationSet.from_labelme(out / "sub")
    assert (out / "sub" / coffee.image_id).resolve() == photos / "sub" / "coffee.png"
    assert coffee.boxes == []


def test_a_format_other_than_jsonl_needs_an_output(triton: EmbeddedServer, photos: Path) -> None:
    done = run_cli("infer", "--url", triton.grpc_url, "--format", "yolo", str(photos))
    assert done.returncode == 2 and "--format yolo needs --output FOLDER" in done.stderr


# The person category of COCO's person_keypoints annotations, as the data set ships it.
COCO_PERSON_KEYPOINTS = [
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
    "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee",
    "right_knee", "left_ankle", "right_ankle",
]  # fmt: skip
COCO_PERSON_SKELETON = [
    [16, 14], [14, 12], [17, 15], [15, 13], [12, 13], [6, 12], [7, 13], [6, 7], [6, 8], [7, 9],
    [8, 10], [9, 11], [2, 3], [1, 2], [1, 3], [2, 4], [3, 5], [4, 6], [5, 7],
]  # fmt: skip


def test_keypoint_names_and_groups_in_labelme_and_coco(triton: EmbeddedServer, tmp_path: Path) -> None:
    """Two faces on one picture: labelme gives each face its own group_id (its rectangle and its
    six points) and names the points as the model does ("face/right eye"; they were
    "face/keypoint 0" with group_id null); COCO's face category carries the six names. A pose
    model's COCO category carries COCO's own person keypoints and skeleton."""
    photos = tmp_path / "photos"
    photos.mkdir()
    canvas = np.full((480, 640, 3), (210, 200, 190), np.uint8)
    for x, y in ((40, 60), (360, 120)):
        head = head_image(0.9)
        canvas[y : y + head.shape[0], x : x + head.shape[1]] = head
    cv2.imwrite(str(photos / "two.png"), bgr(canvas))
    names = ["right eye", "left eye", "nose tip", "mouth centre", "right ear tragion", "left ear tragion"]

    out = tmp_path / "labelme"
    url = triton.grpc_url
    done = run_cli("infer", "--url", url, "--format", "labelme", "--output", str(out), str(photos))
    assert done.returncode == 0, done.stderr
    shapes = json.loads((out / "two.json").read_text())["shapes"]
    groups: dict[int, list[dict[str, Any]]] = {}
    for shape in shapes:
        groups.setdefault(shape["group_id"], []).append(shape)
    assert sorted(groups) == [1, 2]
    for members in groups.values():
        assert members[0]["shape_type"] == "rectangle" and members[0]["label"] == "face"
        points = [s["label"] for s in members if s["shape_type"] == "point"]
        assert points and set(points) <= {f"face/{n}" for n in names}, points
        x1, y1, x2, y2 = (v for p in members[0]["points"] for v in p)
        for point in (s for s in members if s["shape_type"] == "point"):
            (px, py) = point["points"][0]  # a face's points lie around its own box
            assert x1 - 40 <= px <= x2 + 40 and y1 - 40 <= py <= y2 + 40
    (parsed,) = AnnotationSet.from_labelme(out)
    assert len(parsed.boxes) == 2

    coco_file = tmp_path / "faces.json"
    done = run_cli("infer", "--url", url, "--format", "coco", "--output", str(coco_file), str(photos))
    assert done.returncode == 0, done.stderr
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(coco_file))
    (category,) = coco.loadCats(coco.getCatIds())
    assert category["keypoints"] == names and category["skeleton"] == []

    pose_file = tmp_path / "pose.json"
    done = run_cli(
        *("infer", "--url", triton.grpc_url, "--model", "fixed_pose"),
        *("--format", "coco", "--output", str(pose_file), str(photos)),
    )
    assert done.returncode == 0, done.stderr
    with contextlib.redirect_stdout(io.StringIO()):
        pose = COCO(str(pose_file))
    (person,) = pose.loadCats(pose.getCatIds())
    assert person["name"] == "person" and person["keypoints"] == COCO_PERSON_KEYPOINTS
    assert person["skeleton"] == COCO_PERSON_SKELETON
    assert all(len(a["keypoints"]) == 17 * 3 for a in pose.loadAnns(pose.getAnnIds()))


def test_a_semantic_model_is_exported_with_a_warning_where_the_format_has_no_masks(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    """`--model person_segmentation`: COCO holds the person mask (its regions' RLEs add up to the
    record's mask), YOLO-seg lines and labelme polygons are written (they were empty), Pascal VOC
    says on stderr that it holds boxes only."""
    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "astronaut.png"), bgr(skimage.data.astronaut()))
    done = run_cli("infer", "--url", triton.grpc_url, "--model", "person_segmentation", str(photos))
    (record,), _ = parse(done.stdout)
    (person,) = record["masks"]
    expected = coco_mask.decode({"size": person["mask"]["size"], "counts": person["mask"]["counts"].encode()})

    coco_file = tmp_path / "person.json"
    done = run_cli(
        *("infer", "--url", triton.grpc_url, "--model", "person_segmentation"),
        *("--format", "coco", "--output", str(coco_file), str(photos)),
    )
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(coco_file))
    anns = coco.loadAnns(coco.getAnnIds())
    assert anns and [c["name"] for c in coco.loadCats(coco.getCatIds())] == ["person"]
    union = np.logical_or.reduce([coco.annToMask(a).astype(bool) for a in anns])
    assert np.array_equal(union, expected.astype(bool))
    assert sum(a["area"] for a in anns) == person["area"]

    for fmt, suffix in (("yolo", ".txt"), ("labelme", ".json")):
        out = tmp_path / fmt
        done = run_cli(
            *("infer", "--url", triton.grpc_url, "--model", "person_segmentation"),
            *("--format", fmt, "--output", str(out), str(photos)),
        )
        assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
        text = (out / f"astronaut{suffix}").read_text()
        if fmt == "yolo":
            lines = text.splitlines()
            assert lines and all(line.startswith("0 ") and len(line.split()) >= 7 for line in lines)
        else:
            shapes = json.loads(text)["shapes"]
            assert shapes and all(s["shape_type"] == "polygon" and s["label"] == "person" for s in shapes)

    out = tmp_path / "voc"
    done = run_cli(
        *("infer", "--url", triton.grpc_url, "--model", "person_segmentation"),
        *("--format", "voc", "--output", str(out), str(photos)),
    )
    assert done.returncode == 0, done.stderr
    assert "warning: Pascal VOC holds boxes only: the segmentation masks of 1 image were not written" in (
        done.stderr
    )
