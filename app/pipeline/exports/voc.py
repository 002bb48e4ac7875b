"""Pascal VOC XML, one `stem.xml` per image. VOC pixels are 1-based and inclusive: a box
x1, y1, x2, y2 (0-based, x2/y2 exclusive) becomes xmin = x1 + 1, xmax = x2 (rounded)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from app.pipeline.exports.images import ExportImage
from app.pipeline.exports.text_safety import xml_text


def _sub(parent: ET.Element, tag: str, text: object) -> ET.Element:
    node = ET.SubElement(parent, tag)
    node.text = xml_text(str(text))  # a label or a file name may hold what XML cannot
    return node


def voc_box(box: tuple[float, float, float, float], width: int, height: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (float(v) for v in box)
    xmin = min(max(round(x1) + 1, 1), width)
    ymin = min(max(round(y1) + 1, 1), height)
    xmax = min(max(round(x2), xmin), width)
    ymax = min(max(round(y2), ymin), height)
    return xmin, ymin, xmax, ymax


def voc_xml(image: ExportImage) -> str:
    root = ET.Element("annotation")
    source = Path(image.source)
    _sub(root, "folder", source.parent.name)
    _sub(root, "filename", Path(image.file_name).name)
    _sub(root, "path", os.path.abspath(image.source) if image.frame is None else image.file_name)
    _sub(_sub(root, "source", ""), "database", "Unknown")
    size = _sub(root, "size", "")
    _sub(size, "width", image.width)
    _sub(size, "height", image.height)
    _sub(size, "depth", 3)
    _sub(root, "segmented", 0)
    for det in image.detections:
        obj = _sub(root, "object", "")
        _sub(obj, "name", det.label)
        _sub(obj, "pose", "Unspecified")
        _sub(obj, "truncated", 0)
        _sub(obj, "difficult", 0)
        _sub(obj, "score", f"{float(det.score):.5f}")
        bndbox = _sub(obj, "bndbox", "")
        for tag, value in zip(
            ("xmin", "ymin", "xmax", "ymax"), voc_box(det.box, image.width, image.height), strict=True
        ):
            _sub(bndbox, tag, value)
    for node in root.iter():
        if node.text == "":
            node.text = None
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
