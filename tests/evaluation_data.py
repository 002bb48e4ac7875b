"""Hand-made labelled datasets for the evaluation tests, written in the four formats by this
module's own small writers (not the product's exporters, so reading is checked against an
independent writer), and pycocotools' COCOeval run on the same objects and detections: the
reference the product's figures must equal."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pycocotools.mask as _mask
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from tests.media import face_box, head_image

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 (pixels, x2/y2 exclusive)


@dataclass
class Obj:
    label: str
    box: Box
    polygon: list[float] | None = None  # flat [x1, y1, ...] (segm)
    keypoints: list[float] | None = None  # [x, y, v] * K (keypoints)


@dataclass
class Img:
    name: str  # file name, e.g. "a.png"
    width: int
    height: int
    objects: list[Obj] = field(default_factory=list)
    pixels: np.ndarray | None = None  # BGR; None: a plain grey image


def write_images(folder: Path, images: Sequence[Img]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for img in images:
        pixels = img.pixels if img.pixels is not None else np.full((img.height, img.width, 3), 128, np.uint8)
        assert cv2.imwrite(str(folder / img.name), pixels)


def write_coco(path: Path, images: Sequence[Img], classes: Sequence[str]) -> None:
    doc: dict[str, Any] = {"images": [], "annotations": [], "categories": []}
    doc["categories"] = [{"id": 10 + i, "name": name} for i, name in enumerate(classes)]
    for image_id, img in enumerate(images, start=1):
        doc["images"].append(
            {"id": image_id, "file_name": img.name, "width": img.width, "height": img.height}
        )
        for obj in img.objects:
            x1, y1, x2, y2 = obj.box
            ann: dict[str, Any] = {
                "id": len(doc["annotations"]) + 1,
                "image_id": image_id,
                "category_id": 10 + [c.casefold() for c in classes].index(obj.label.casefold()),
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "area": (x2 - x1) * (y2 - y1),
                "iscrowd": 0,
            }
            if obj.polygon:
                ann["segmentation"] = [obj.polygon]
            if obj.keypoints:
                ann["keypoints"] = obj.keypoints
                ann["num_keypoints"] = sum(1 for v in obj.keypoints[2::3] if v > 0)
            doc["annotations"].append(ann)
    path.write_text(json.dumps(doc), encoding="utf-8")


def write_yolo(root: Path, images: Sequence[Img], classes: Sequence[str]) -> None:
    """images/ + labels/ + data.yaml (Ultralytics' layout)."""
    write_images(root / "images", images)
    (root / "labels").mkdir(parents=True, exist_ok=True)
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(classes))
    (root / "data.yaml").write_text(f"path: .\nval: images\nnames:\n{names}\n", encoding="utf-8")
    lowered = [c.casefold() for c in classes]
    for img in images:
        lines = []
        for obj in img.objects:
            cls = lowered.index(obj.label.casefold())
            if obj.polygon:
                coords = " ".join(
                    f"{v / (img.width if i % 2 == 0 else img.height):.6f}" for i, v in enumerate(obj.polygon)
                )
                lines.append(f"{cls} {coords}")
                continue
            x1, y1, x2, y2 = obj.box
            line = (
                f"{cls} {(x1 + x2) / 2 / img.width:.6f} {(y1 + y2) / 2 / img.height:.6f} "
                f"{(x2 - x1) / img.width:.6f} {(y2 - y1) / img.height:.6f}"
            )
            lines.append(line)
        (root / "labels" / f"{Path(img.name).stem}.txt").write_text("".join(f"{s}\n" for s in lines))


def write_voc(root: Path, images: Sequence[Img]) -> None:
    """Annotations/ + JPEGImages/ (VOC's 1-based inclusive pixels: xmin = x1 + 1, xmax = x2)."""
    write_images(root / "JPEGImages", images)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    for img in images:
        node = ET.Element("annotation")
        ET.SubElement(node, "filename").text = img.name
        size = ET.SubElement(node, "size")
        ET.SubElement(size, "width").text = str(img.width)
        ET.SubElement(size, "height").text = str(img.height)
        for obj in img.objects:
            o = ET.SubElement(node, "object")
            ET.SubElement(o, "name").text = obj.label
            ET.SubElement(o, "difficult").text = "0"
            b = ET.SubElement(o, "bndbox")
            x1, y1, x2, y2 = obj.box
            for tag, value in zip(("xmin", "ymin", "xmax", "ymax"), (x1 + 1, y1 + 1, x2, y2), strict=True):
                ET.SubElement(b, tag).text = f"{value:g}"
        path = root / "Annotations" / f"{Path(img.name).stem}.xml"
        path.write_text(ET.tostring(node, encoding="unicode"), encoding="utf-8")


def write_labelme(folder: Path, images: Sequence[Img], keypoint_names: Sequence[str] = ()) -> None:
    """One JSON beside each image; objects with keypoints or a polygon tie their shapes by group_id."""
    write_images(folder, images)
    for img in images:
        shapes: list[dict[str, Any]] = []
        for k, obj in enumerate(img.objects):
            group = k if (obj.keypoints or obj.polygon) else None
            x1, y1, x2, y2 = obj.box
            shapes.append(_shape(obj.label, [[x1, y1], [x2, y2]], "rectangle", group))
            if obj.polygon:
                points = [[obj.polygon[i], obj.polygon[i + 1]] for i in range(0, len(obj.polygon), 2)]
                shapes.append(_shape(obj.label, points, "polygon", group))
            for i in range(0, len(obj.keypoints or []), 3):
                x, y, v = (obj.keypoints or [])[i : i + 3]
                if v > 0:
                    shapes.append(_shape(f"{obj.label}/{keypoint_names[i // 3]}", [[x, y]], "point", group))
        doc = {
            "version": "5.5.0",
            "flags": {},
            "shapes": shapes,
            "imagePath": img.name,
            "imageData": None,
            "imageHeight": img.height,
            "imageWidth": img.width,
        }
        (folder / f"{Path(img.name).stem}.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


def _shape(label: str, points: list[list[float]], kind: str, group: int | None) -> dict[str, Any]:
    return {"label": label, "points": points, "group_id": group, "shape_type": kind, "flags": {}}


def write_dataset(
    fmt: str, root: Path, images: Sequence[Img], classes: Sequence[str]
) -> tuple[Path, list[str]]:
    """The dataset in `fmt` under `root`; returns (DATASET argument, extra CLI arguments)."""
    root.mkdir(parents=True, exist_ok=True)
    if fmt == "coco":
        write_images(root / "images", images)
        write_coco(root / "instances.json", images, classes)
        return root / "instances.json", []
    if fmt == "yolo":
        write_yolo(root, images, classes)
        return root, []
    if fmt == "voc":
        write_voc(root, images)
        return root, []
    write_labelme(root, images)
    return root, []


def face_images() -> list[Img]:
    """640x480 images with the astronaut's head pasted at a few sizes; the face boxes as a
    labeller would draw them (approximately: IoU with the detector's from ~0.5 to ~0.9)."""
    layouts = {
        "f1.png": [((40, 60), 1.0), ((380, 200), 0.7)],
        "f2.png": [((250, 100), 1.3)],
        "f3.png": [((60, 250), 0.75), ((300, 40), 0.8), ((470, 260), 0.9)],
        "f4.png": [],  # a labelled face the detector cannot find (no head there): a miss
        "f5.png": [((200, 150), 0.9)],  # a head nobody labelled: a false positive
    }
    images = []
    for name, heads in layouts.items():
        canvas = np.full((480, 640, 3), (210, 200, 190), np.uint8)
        objects = []
        for (x, y), scale in heads:
            head = cv2.cvtColor(head_image(scale), cv2.COLOR_RGB2BGR)
            canvas[y : y + head.shape[0], x : x + head.shape[1]] = head
            if name != "f5.png":
                objects.append(Obj("face", tuple(float(v) for v in face_box((x, y), scale))))
        if name == "f4.png":
            objects.append(Obj("face", (300.0, 200.0, 360.0, 270.0)))
        images.append(Img(name, 640, 480, objects, canvas))
    return images


def reference(
    images: Sequence[Img],
    classes: Sequence[str],
    records: Sequence[Mapping[str, Any]],
    iou_type: str = "bbox",
    sigmas: Sequence[float] | None = None,
) -> COCOeval:
    """pycocotools' COCOeval of the records' detections against the hand-made objects (images
    matched by file name; detections of other classes left out, as the product does)."""
    lowered = [c.casefold() for c in classes]
    gt: dict[str, Any] = {"images": [], "annotations": [], "categories": []}
    gt["categories"] = [{"id": i + 1, "name": c, "keypoints": []} for i, c in enumerate(classes)]
    ids = {}
    for image_id, img in enumerate(images, start=1):
        ids[img.name] = image_id
        gt["images"].append({"id": image_id, "file_name": img.name, "width": img.width, "height": img.height})
        for obj in img.objects:
            x1, y1, x2, y2 = obj.box
            ann: dict[str, Any] = {
                "id": len(gt["annotations"]) + 1,
                "image_id": image_id,
                "category_id": lowered.index(obj.label.casefold()) + 1,
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "area": (x2 - x1) * (y2 - y1),
                "iscrowd": 0,
            }
            if iou_type == "segm":
                ann["segmentation"] = [obj.polygon]
                rles = _mask.frPyObjects([obj.polygon], img.height, img.width)
                ann["area"] = float(_mask.area(_mask.merge(rles)))
            if iou_type == "keypoints":
                ann["keypoints"] = obj.keypoints
                ann["num_keypoints"] = sum(1 for v in (obj.keypoints or [])[2::3] if v > 0)
            gt["annotations"].append(ann)
    dets = []
    for record in records:
        if not record.get("ok"):
            continue
        image_id = ids[Path(record["source"]).name]
        for det in record["detections"]:
            if det["label"].casefold() not in lowered:
                continue
            out: dict[str, Any] = {
                "image_id": image_id,
                "category_id": lowered.index(det["label"].casefold()) + 1,
                "score": det["score"],
            }
            if iou_type == "bbox":
                x1, y1, x2, y2 = det["box"]
                out["bbox"] = [x1, y1, x2 - x1, y2 - y1]
            elif iou_type == "segm":
                out["segmentation"] = det["mask"]
            else:
                out["keypoints"] = [v for kp in det["keypoints"] for v in kp]
            dets.append(out)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = copy.deepcopy(gt)
        coco.createIndex()
        result = coco.loadRes(copy.deepcopy(dets)) if dets else COCO()
        e = COCOeval(coco, result, iou_type)
        if sigmas is not None:
            e.params.kpt_oks_sigmas = np.asarray(sigmas)
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e


def reference_metrics(e: COCOeval) -> dict[str, float | None]:
    """The product's metric names for pycocotools' stats (-1 as None)."""
    if e.params.iouType == "keypoints":
        names = ["map", "map50", "map75", "map_medium", "map_large", "mar_20", "mar50_20", "mar75_20"]
    else:
        names = [
            "map",
            "map50",
            "map75",
            "map_small",
            "map_medium",
            "map_large",
            "mar_1",
            "mar_10",
            "mar_100",
        ]
    return {n: (float(v) if v > -1 else None) for n, v in zip(names, e.stats, strict=False)}


def reference_class_ap(e: COCOeval, k: int) -> tuple[float | None, float | None]:
    block = e.eval["precision"][:, :, k, 0, -1]
    every, half = block[block > -1], block[0][block[0] > -1]
    return (float(every.mean()) if every.size else None, float(half.mean()) if half.size else None)


def assert_close(
    got: Mapping[str, float | None], expected: Mapping[str, float | None], tol: float = 1e-4
) -> None:
    for key, value in expected.items():
        mine = got.get(key)
        if value is None:
            assert mine is None, (key, mine)
        else:
            assert mine is not None and abs(mine - value) <= tol, (key, mine, value)
