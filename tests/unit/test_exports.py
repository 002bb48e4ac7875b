"""The export formats, re-read by independent parsers: pycocotools (COCO), globox (YOLO,
Pascal VOC, labelme), ElementTree, and the checks labelme's own loader makes."""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import cv2
import numpy as np
import pytest
from globox import AnnotationSet
from pycocotools import mask as coco_mask
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from app.inference.masks import BinaryMask
from app.inference.result import Detection, InferenceResult, Status
from app.pipeline.exports import export_images, relative_name, write_export
from app.pipeline.exports.coco import coco_document
from app.pipeline.exports.crops import write_crops
from app.pipeline.exports.folder import PerImageWriter, planned_paths
from app.pipeline.exports.formats import ExportFormat
from app.pipeline.exports.images import ExportImage, StemBook, class_names
from app.pipeline.exports.voc import voc_box
from app.sources.images import read_image

LABELS = ["face", "hand"]
FACE = Detection((10.0, 20.0, 110.5, 220.0), 0.93, 0, "face")
HAND = Detection((200, 30, 320, 90), 0.61, 1, "hand")


def _image(path: Path, w: int, h: int) -> Path:
    rng = np.random.default_rng(w * h)
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), rng.integers(0, 255, (h, w, 3), dtype=np.uint8))
    return path


def _ok(path: Path, w: int, h: int, dets: list[Detection]) -> InferenceResult:
    return InferenceResult("r", Status.OK, str(path), width=w, height=h, detections=dets)


@pytest.fixture
def batch(tmp_path: Path) -> tuple[Path, list[InferenceResult]]:
    root = tmp_path / "photos"
    a = _image(root / "a.png", 320, 240)
    b = _image(root / "sub" / "b.png", 200, 100)
    c = _image(root / "empty.png", 64, 48)
    results = [
        _ok(a, 320, 240, [FACE, HAND]),
        _ok(b, 200, 100, [Detection((0.0, 0.0, 50.0, 40.0), 0.8, 0, "face")]),
        _ok(c, 64, 48, []),
        InferenceResult(None, Status.FAILED, str(root / "bad.png"), error="corrupt"),
        InferenceResult(None, Status.SKIPPED, str(root / "notes.txt"), error="not an image"),
    ]
    return root, results


def _images(root: Path, results: list[InferenceResult]) -> list[ExportImage]:
    return export_images(results, lambda s: relative_name(s, [root]))


def test_relative_names_keep_sub_folders(tmp_path: Path) -> None:
    root = tmp_path / "photos"
    assert relative_name(str(root / "sub" / "x.jpg"), [root]) == "sub/x.jpg"
    assert relative_name(str(tmp_path / "alone.jpg"), [root, tmp_path / "alone.jpg"]) == "alone.jpg"
    assert relative_name(str(root / "sub" / "x.jpg"), [root, root / "sub"]) == "x.jpg"  # deepest folder
    assert relative_name("/elsewhere/y.png", [root]) == "y.png"


def test_stems_never_collide_and_video_frames_are_numbered() -> None:
    book = StemBook()
    assert [book.claim(s) for s in ("x", "X", "x", "y")] == ["x", "X_2", "x_3", "y"]
    frame = ExportImage("clip.mp4", "clip.mp4", 10, 10, [], frame=42)
    assert frame.stem == "clip_000042" and frame.file_name == "clip_000042.png"
    assert ExportImage("s/p.jpg", "s/p.jpg", 1, 1).stem == "s/p"


def test_class_names_are_indexed_by_class_id() -> None:
    image = ExportImage("a", "a", 1, 1, [Detection((0, 0, 1, 1), 0.5, 3, "cup")])
    assert class_names([image], ["person"]) == ["person", "class 1", "class 2", "cup"]


def test_coco_is_read_by_pycocotools_and_matches_the_detections(
    tmp_path: Path, batch: tuple[Path, list[InferenceResult]]
) -> None:
    root, results = batch
    out = tmp_path / "coco.json"
    assert write_export(ExportFormat.COCO, str(out), _images(root, results), LABELS) == 3
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(out))
    images = {img["file_name"]: img for img in coco.loadImgs(coco.getImgIds())}
    assert set(images) == {"a.png", "sub/b.png", "empty.png"}  # failed/skipped inputs have no image
    assert (images["sub/b.png"]["width"], images["sub/b.png"]["height"]) == (200, 100)
    assert {c["id"]: c["name"] for c in coco.loadCats(coco.getCatIds())} == {1: "face", 2: "hand"}
    anns = coco.loadAnns(coco.getAnnIds(imgIds=[images["a.png"]["id"]]))
    assert [(a["category_id"], a["bbox"], a["score"]) for a in anns] == [
        (1, [10.0, 20.0, 100.5, 200.0], 0.93),
        (2, [200.0, 30.0, 120.0, 60.0], 0.61),
    ]
    assert anns[0]["area"] == pytest.approx(100.5 * 200.0)
    assert coco.getAnnIds(imgIds=[images["empty.png"]["id"]]) == []
    # The detections as results against themselves as ground truth: a perfect score, so every
    # box, category and image id is consistent in the file.
    with contextlib.redirect_stdout(io.StringIO()):
        dt = coco.loadRes(json.loads(out.read_text())["annotations"])
        ev = COCOeval(coco, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    assert ev.stats[0] == pytest.approx(1.0)


def test_yolo_files_are_read_by_globox(tmp_path: Path, batch: tuple[Path, list[InferenceResult]]) -> None:
    root, results = batch
    out = tmp_path / "yolo"
    images = _images(root, results)
    assert write_export(ExportFormat.YOLO, str(out), images, LABELS) == 3
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.txt")) == [
        "a.txt", "classes.txt", "empty.txt", "sub/b.txt"
    ]  # fmt: skip
    assert (out / "classes.txt").read_text().splitlines() == LABELS
    assert (out / "empty.txt").read_text() == ""  # an image without detections: an empty file
    (out / "classes.txt").unlink()  # not a label file, for the parser below
    parsed = AnnotationSet.from_yolo_darknet(out, image_folder=root, image_extension=".png")
    a = parsed["a.png"]
    assert a.image_size == (320, 240)
    got = sorted((b.label, *(round(v, 2) for v in b.ltrb)) for b in a.boxes)
    assert got == [("0", 10.0, 20.0, 110.5, 220.0), ("1", 200.0, 30.0, 320.0, 90.0)]


def test_voc_xml_is_read_by_globox_with_one_based_pixels(
    tmp_path: Path, batch: tuple[Path, list[InferenceResult]]
) -> None:
    root, results = batch
    out = tmp_path / "voc"
    assert write_export(ExportFormat.VOC, str(out), _images(root, results), LABELS) == 3
    parsed = AnnotationSet.from_pascal_voc(out, recursive=True)
    boxes = {ann.image_id: sorted((b.label, *b.ltrb) for b in ann.boxes) for ann in parsed}
    assert boxes["a.png"] == [("face", 11.0, 21.0, 110.0, 220.0), ("hand", 201.0, 31.0, 320.0, 90.0)]
    assert boxes["b.png"] == [("face", 1.0, 1.0, 50.0, 40.0)]
    tree = ET.parse(out / "sub" / "b.xml").getroot()
    assert tree.findtext("size/width") == "200" and tree.findtext("size/depth") == "3"
    assert Path(tree.findtext("path") or "") == root / "sub" / "b.png"
    assert voc_box((318.6, 0.2, 400.0, 5.0), 320, 240) == (320, 1, 320, 5)  # clipped, never inverted


def _labelme_load(json_path: Path) -> dict[str, object]:
    """What labelme's LabelFile.load requires of a file (labelme 5.x/6.x)."""
    data = json.loads(json_path.read_text())
    for key in ("version", "imageData", "imagePath", "shapes", "flags", "imageHeight", "imageWidth"):
        assert key in data, key
    assert data["imageData"] is None
    image = read_image(json_path.parent / data["imagePath"])  # resolved from the JSON's folder
    assert image.shape[:2] == (data["imageHeight"], data["imageWidth"])
    for shape in data["shapes"]:
        assert isinstance(shape["label"], str) and isinstance(shape["shape_type"], str)
        assert shape["points"] and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(v, int | float) for v in p)
            for p in shape["points"]
        )
        assert all(isinstance(k, str) and isinstance(v, bool) for k, v in shape["flags"].items())
        assert shape["group_id"] is None or isinstance(shape["group_id"], int)
        assert isinstance(shape["description"], str)
    return data


def test_labelme_files_open_their_image_and_hold_the_boxes(
    tmp_path: Path, batch: tuple[Path, list[InferenceResult]]
) -> None:
    root, results = batch
    out = tmp_path / "elsewhere" / "labelme"
    assert write_export(ExportFormat.LABELME, str(out), _images(root, results), LABELS) == 3
    data = _labelme_load(out / "sub" / "b.json")
    assert data["imagePath"] == "../../../photos/sub/b.png"
    parsed = AnnotationSet.from_labelme(out, recursive=True)
    boxes = {Path(ann.image_id).name: sorted((b.label, *b.ltrb) for b in ann.boxes) for ann in parsed}
    assert boxes["a.png"] == [("face", 10.0, 20.0, 110.5, 220.0), ("hand", 200.0, 30.0, 320.0, 90.0)]
    assert boxes["empty.png"] == []
    shape = _labelme_load(out / "a.json")["shapes"][0]  # type: ignore[index]
    assert shape["shape_type"] == "rectangle" and shape["score"] == 0.93


def test_crops_hold_the_pixels_inside_each_box(
    tmp_path: Path, batch: tuple[Path, list[InferenceResult]]
) -> None:
    root, results = batch
    out = tmp_path / "crops"
    assert write_crops(out, _images(root, results), read_image) == 3
    crop = read_image(out / "a_01_face.png")
    source = read_image(root / "a.png")
    assert crop.shape == (200, 101, 3)
    assert np.array_equal(crop, source[20:220, 10:111])
    assert (out / "sub" / "b_01_face.png").is_file() and (out / "a_02_hand.png").is_file()


def test_planned_paths_name_what_would_be_overwritten(
    tmp_path: Path, batch: tuple[Path, list[InferenceResult]]
) -> None:
    root, results = batch
    images = _images(root, results)
    paths = planned_paths(ExportFormat.VOC, tmp_path, images)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == ["a.xml", "sub/b.xml", "empty.xml"]
    writer = PerImageWriter(ExportFormat.VOC, tmp_path)
    assert [writer.write(i) for i in images] == paths


def test_masks_and_keypoints_go_into_coco_labelme_and_yolo(tmp_path: Path) -> None:
    full = np.zeros((40, 60), bool)
    full[10:30, 20:50] = True
    masked = Detection((20, 10, 50, 30), 0.9, 1, "blob", mask=BinaryMask.from_full(full))
    posed = Detection((5, 5, 25, 35), 0.8, 0, "person", keypoints=((10.0, 10.0, 0.9), (12.0, 30.0, 0.1)))
    image = ExportImage("x.png", "x.png", 60, 40, [masked, posed])

    coco = coco_document([image])
    seg, kp = coco["annotations"]
    rle = {"size": seg["segmentation"]["size"], "counts": seg["segmentation"]["counts"].encode()}
    assert np.array_equal(coco_mask.decode(rle).astype(bool), full) and seg["area"] == 600
    assert kp["keypoints"] == [10.0, 10.0, 2, 0, 0, 0] and kp["num_keypoints"] == 1

    from app.pipeline.exports.labelme import labelme_document
    from app.pipeline.exports.yolo import yolo_text

    shapes = labelme_document(image, tmp_path / "x.json")["shapes"]
    kinds = [s["shape_type"] for s in shapes]
    assert kinds.count("rectangle") == 2 and "polygon" in kinds and kinds.count("point") == 1
    seg_line, pose_line = yolo_text(image).splitlines()
    assert seg_line.startswith("1 ") and len(seg_line.split()) > 5  # a polygon, not a box
    assert pose_line.startswith("0 ") and len(pose_line.split()) == 5 + 2 * 3  # box + 2 keypoints
