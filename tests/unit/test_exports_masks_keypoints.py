"""Semantic masks and keypoint names in every export, read back by independent parsers
(pycocotools, globox, OpenCV polygon filling as YOLO and labelme tools rasterise) and by the
product's own `evaluate` readers; and the warning where a format cannot hold something."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from globox import AnnotationSet
from pycocotools import mask as coco_mask
from pycocotools.coco import COCO

from app.evaluation.datasets.coco import read_coco
from app.evaluation.datasets.labelme import read_labelme
from app.inference.masks import BinaryMask
from app.inference.result import ClassScore, Detection, InferenceResult, SemanticMask, Status
from app.pipeline.exports import ModelVocabulary, export_images, write_export
from app.pipeline.exports.formats import ExportFormat
from app.pipeline.exports.gaps import export_gaps
from app.pipeline.exports.images import ExportImage

W, H = 160, 120
SCENE_LABELS = ["background", "sky", "road"]
FACE_NAMES = ("right eye", "left eye", "nose tip")
FACE_SKELETON = ((0, 2), (1, 2))


def _scene() -> tuple[np.ndarray, np.ndarray]:
    """sky: one band at the top; road: two blocks apart (two regions)."""
    sky = np.zeros((H, W), bool)
    sky[0:30, :] = True
    road = np.zeros((H, W), bool)
    road[80:110, 10:60] = True
    road[90:115, 100:150] = True
    return sky, road


def _semantic_image(tmp_path: Path) -> ExportImage:
    path = tmp_path / "photos" / "street.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.zeros((H, W, 3), np.uint8))
    sky, road = _scene()
    masks = [
        SemanticMask(1, "sky", BinaryMask.from_full(sky)),
        SemanticMask(2, "road", BinaryMask.from_full(road)),
    ]
    result = InferenceResult("r", Status.OK, str(path), width=W, height=H, masks=masks)
    (image,) = export_images([result], lambda s: Path(s).name)
    return image


def _regions() -> list[np.ndarray]:
    sky, road = _scene()
    left, right = road.copy(), road.copy()
    left[:, 80:] = False
    right[:, :80] = False
    return [sky, left, right]


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def _polygon_mask(flat: list[float]) -> np.ndarray:
    canvas = np.zeros((H, W), np.uint8)
    points = np.round(np.array(flat, np.float64).reshape(-1, 2)).astype(np.int32)
    cv2.fillPoly(canvas, [points], 1)
    return canvas.astype(bool)


def _best_iou(mask: np.ndarray, regions: list[np.ndarray]) -> float:
    return max(_iou(mask, region) for region in regions)


def test_a_semantic_segmentation_is_written_by_coco_yolo_and_labelme(tmp_path: Path) -> None:
    """One annotation per connected region of each class (what `evaluate` scores), exact in COCO
    (RLE), as polygons in YOLO-seg and labelme; Pascal VOC holds boxes only and says so."""
    image = _semantic_image(tmp_path)
    regions = _regions()

    coco_file = tmp_path / "semantic.json"
    assert write_export(ExportFormat.COCO, coco_file, [image], SCENE_LABELS) == 3
    coco = COCO(str(coco_file))
    anns = coco.loadAnns(coco.getAnnIds())
    names = {c["id"]: c["name"] for c in coco.loadCats(coco.getCatIds())}
    assert sorted(names[a["category_id"]] for a in anns) == ["road", "road", "sky"]
    decoded = [coco.annToMask(a).astype(bool) for a in anns]
    for region in regions:  # every region exactly once, its pixels exactly
        assert sum(np.array_equal(d, region) for d in decoded) == 1
    assert all(a["area"] == int(coco.annToMask(a).sum()) and a["iscrowd"] == 0 for a in anns)
    road = [a for a in anns if names[a["category_id"]] == "road"]
    union = np.logical_or.reduce([coco_mask.decode(a["segmentation"]).astype(bool) for a in road])
    assert np.array_equal(union, _scene()[1])

    yolo = tmp_path / "yolo"
    write_export(ExportFormat.YOLO, yolo, [image], SCENE_LABELS)
    lines = (yolo / "street.txt").read_text().splitlines()
    assert sorted(line.split()[0] for line in lines) == ["1", "2", "2"]
    for line in lines:
        flat = [float(v) * (W if i % 2 == 0 else H) for i, v in enumerate(line.split()[1:])]
        assert _best_iou(_polygon_mask(flat), regions) > 0.95
    assert (yolo / "classes.txt").read_text().splitlines() == SCENE_LABELS

    labelme = tmp_path / "labelme"
    write_export(ExportFormat.LABELME, labelme, [image], SCENE_LABELS)
    shapes = json.loads((labelme / "street.json").read_text())["shapes"]
    assert [s["shape_type"] for s in shapes] == ["polygon"] * 3
    assert len({s["group_id"] for s in shapes}) == 3  # a region is an object
    for shape in shapes:
        assert _best_iou(_polygon_mask([v for p in shape["points"] for v in p]), regions) > 0.95
    (parsed,) = AnnotationSet.from_labelme(labelme, include_poly=True)
    assert sorted(b.label for b in parsed.boxes) == ["road", "road", "sky"]
    dataset = read_labelme(labelme, tmp_path / "photos")  # the product's own reader: three objects
    assert sorted(o.label for o in dataset.images[0].objects) == ["road", "road", "sky"]

    voc = tmp_path / "voc"
    write_export(ExportFormat.VOC, voc, [image], SCENE_LABELS)
    assert "<object>" not in (voc / "street.xml").read_text()
    (warning,) = export_gaps(ExportFormat.VOC, [image])
    assert "Pascal VOC holds boxes only" in warning and "segmentation masks of 1 image" in warning
    for fmt in (ExportFormat.COCO, ExportFormat.YOLO, ExportFormat.LABELME, ExportFormat.JSONL):
        assert export_gaps(fmt, [image]) == []


def _face(x: float, score: float) -> Detection:
    points = ((x + 10, 30.0, 0.9), (x + 30, 30.0, 0.9), (x + 20, 42.0, 0.9))
    return Detection((x, 20.0, x + 40, 60.0), score, 0, "face", keypoints=points)


def test_keypoint_names_and_one_group_per_face_in_labelme_and_coco(tmp_path: Path) -> None:
    """Two faces: labelme gives each its own group_id (its rectangle and its points) and names
    the points by the model's keypoint names; COCO's category carries `keypoints` and the
    1-based `skeleton`. pycocotools and the product's own readers read them back."""
    path = tmp_path / "photos" / "two.png"
    path.parent.mkdir(parents=True)
    cv2.imwrite(str(path), np.zeros((H, W, 3), np.uint8))
    result = InferenceResult(
        "r", Status.OK, str(path), width=W, height=H, detections=[_face(10, 0.9), _face(90, 0.8)]
    )
    images = export_images([result], lambda s: Path(s).name)
    vocabulary = ModelVocabulary(("face",), FACE_NAMES, FACE_SKELETON)

    labelme = tmp_path / "labelme"
    write_export(ExportFormat.LABELME, labelme, images, vocabulary)
    shapes = json.loads((labelme / "two.json").read_text())["shapes"]
    groups: dict[int, list[dict[str, object]]] = {}
    for shape in shapes:
        assert isinstance(shape["group_id"], int)
        groups.setdefault(shape["group_id"], []).append(shape)
    assert len(groups) == 2
    for members in groups.values():
        assert [s["shape_type"] for s in members] == ["rectangle", "point", "point", "point"]
        assert [s["label"] for s in members[1:]] == [f"face/{name}" for name in FACE_NAMES]
    dataset = read_labelme(labelme, tmp_path / "photos", keypoint_names=FACE_NAMES)
    objects = sorted(dataset.images[0].objects, key=lambda o: o.box[0] if o.box else 0)
    assert len(objects) == 2 and dataset.keypoint_names == list(FACE_NAMES)
    assert objects[1].keypoints == [100.0, 30.0, 2.0, 120.0, 30.0, 2.0, 110.0, 42.0, 2.0]

    coco_file = tmp_path / "faces.json"
    write_export(ExportFormat.COCO, coco_file, images, vocabulary)
    coco = COCO(str(coco_file))
    (category,) = coco.loadCats(coco.getCatIds())
    assert category["keypoints"] == list(FACE_NAMES) and category["skeleton"] == [[1, 3], [2, 3]]
    anns = coco.loadAnns(coco.getAnnIds())
    assert [a["num_keypoints"] for a in anns] == [3, 3]
    assert read_coco(coco_file).keypoint_names == list(FACE_NAMES)
    # Without the model's names (a list of labels): numbered, still grouped.
    write_export(ExportFormat.LABELME, tmp_path / "plain", images, ["face"])
    plain = json.loads((tmp_path / "plain" / "two.json").read_text())["shapes"]
    assert [s["label"] for s in plain if s["shape_type"] == "point"][:3] == [
        "face/keypoint 0",
        "face/keypoint 1",
        "face/keypoint 2",
    ]


def test_what_a_format_cannot_hold_is_named() -> None:
    full = np.zeros((H, W), bool)
    full[10:30, 20:50] = True
    both = Detection((20, 10, 50, 30), 0.9, 0, "person", ((25.0, 15.0, 0.9),), BinaryMask.from_full(full))
    image = ExportImage("x.png", "x.png", W, H, [both], classes=[ClassScore(0, "cat", 0.9)])
    voc = export_gaps(ExportFormat.VOC, [image])
    assert any("masks of 1 detection" in w and "keypoints of 1 detection" in w for w in voc)
    (yolo_both, yolo_classes) = export_gaps(ExportFormat.YOLO, [image])
    assert "not both" in yolo_both and "keypoints of 1 detection with a mask" in yolo_both
    assert "top classes of 1 image" in yolo_classes and "JSON Lines keeps them" in yolo_classes
    (coco,) = export_gaps(ExportFormat.COCO, [image])  # masks and keypoints fit, classes do not
    assert coco.startswith("COCO JSON has no place for image classes")
