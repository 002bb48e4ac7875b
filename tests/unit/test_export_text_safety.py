"""Exports hold whatever a label holds: control characters in a label (from --labels) leave VOC
XML well-formed and YOLO's classes.txt one line per class; JSON exports escape them. And
`--labels` keeps every name at its line's position, splitting only at \\n and \\r\\n."""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from app.commands.common import profile_overrides
from app.inference.decoding.labels import blank_label_ids, label_name, read_labels_file
from app.inference.result import Detection
from app.pipeline.exports import write_export
from app.pipeline.exports.formats import ExportFormat
from app.pipeline.exports.images import ExportImage

ODD = "hot\x0bdog\x0cx\u2028y\x01z\rw"  # every character Python's splitlines would cut at, and more
LABELS = ["cat", ODD]


def _image(tmp_path: Path) -> ExportImage:
    source = tmp_path / "photo.png"
    source.write_bytes(b"")
    dets = [Detection((10.0, 10.0, 60.0, 70.0), 0.9, 1, ODD), Detection((5.0, 5.0, 9.0, 9.0), 0.8, 0, "cat")]
    return ExportImage(str(source), "photo.png", 100, 100, dets)


def test_voc_xml_with_control_characters_in_a_label_is_well_formed(tmp_path: Path) -> None:
    write_export(ExportFormat.VOC, tmp_path / "voc", [_image(tmp_path)], LABELS)
    root = ET.parse(tmp_path / "voc" / "photo.xml").getroot()  # raises when not well-formed
    names = [o.findtext("name") for o in root.iter("object")]
    assert names == ["hot\\x0bdog\\x0cx\u2028y\\x01z\\x0dw", "cat"], "escaped visibly, U+2028 kept"


def test_yolo_classes_are_one_line_each_and_json_exports_round_trip(tmp_path: Path) -> None:
    write_export(ExportFormat.YOLO, tmp_path / "yolo", [_image(tmp_path)], LABELS)
    classes = (tmp_path / "yolo" / "classes.txt").read_text(encoding="utf-8")
    assert len(classes.splitlines()) == 2 and classes.splitlines()[0] == "cat"
    write_export(ExportFormat.COCO, tmp_path / "coco.json", [_image(tmp_path)], LABELS)
    document = json.loads((tmp_path / "coco.json").read_text(encoding="utf-8"))
    assert ODD in {c["name"] for c in document["categories"]}, "JSON holds it exactly"
    write_export(ExportFormat.LABELME, tmp_path / "labelme", [_image(tmp_path)], LABELS)
    shapes = json.loads((tmp_path / "labelme" / "photo.json").read_text(encoding="utf-8"))["shapes"]
    assert ODD in {s["label"] for s in shapes}


def test_labels_keep_their_line_positions_and_split_only_at_newlines(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_text(
        "\ufeffcat\n\n  dog  \r\nhot\x0bdog\x0cx\u2028y\nhot dog, with mustard\n\n\n", encoding="utf-8"
    )
    names = read_labels_file(path)
    assert names == ("cat", "", "dog", "hot\x0bdog\x0cx\u2028y", "hot dog, with mustard")
    assert blank_label_ids(names) == [1]
    assert label_name(names, 1) == "class 1" and label_name(names, 2) == "dog"


def test_a_blank_line_in_labels_is_a_warning_naming_the_file_and_the_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gap-labels.txt"
    path.write_text("face\n\nhand\n", encoding="utf-8")
    overrides = profile_overrides(argparse.Namespace(labels=str(path), profile=None))
    assert overrides is not None and overrides["labels"] == ("face", "", "hand")
    err = capsys.readouterr().err
    assert f"warning: --labels {path}: 1 empty name(s)" in err and "class id(s) 1 " in err
