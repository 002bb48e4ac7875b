"""Class names: COCO list, label files, config parameter, resolution order."""

from pathlib import Path

import pytest

from app.inference.decoding.labels import (
    COCO_NAMES,
    config_labels,
    label_name,
    parse_labels_text,
    read_labels_file,
    resolve_labels,
)


def test_coco_names_in_ultralytics_order() -> None:
    assert len(COCO_NAMES) == 80 and len(set(COCO_NAMES)) == 80
    assert COCO_NAMES[:4] == ("person", "bicycle", "car", "motorcycle")
    assert COCO_NAMES[16] == "dog" and COCO_NAMES[62] == "tv" and COCO_NAMES[79] == "toothbrush"


def test_labels_file_one_per_line_a_blank_line_keeps_its_position(tmp_path: Path) -> None:
    p = tmp_path / "labels.txt"
    p.write_text("\ufeffcat\n\n  dog  \r\nhot dog, with mustard\n\n", encoding="utf-8")
    assert read_labels_file(p) == ("cat", "", "dog", "hot dog, with mustard")


def test_labels_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"missing\.txt: not found"):
        read_labels_file(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match=r"empty\.txt: no names"):
        read_labels_file(empty)


def test_config_labels_commas_or_newlines_wrapped_or_not() -> None:
    wrapped = {"config": {"parameters": {"labels": {"string_value": "face, hand\nfoot\n"}}}}
    assert config_labels(wrapped) == ("face", "hand", "foot")
    assert config_labels({"parameters": {"labels": {"string_value": "face"}}}) == ("face",)
    assert config_labels({"name": "m"}) == ()


def test_resolution_order() -> None:
    assert resolve_labels(["a"], ["b"], 80) == ("a",)
    assert resolve_labels(None, ["b"], 80) == ("b",)
    assert resolve_labels(None, None, 80) == COCO_NAMES
    assert resolve_labels(None, None, 3) == ()
    assert resolve_labels() == ()


def test_label_name_falls_back_to_class_n() -> None:
    assert label_name(("a", "b"), 1) == "b"
    assert label_name(("a", "b"), 2) == "class 2"
    assert label_name((), 0) == "class 0"
    assert label_name(("a",), -1) == "class -1"
    assert parse_labels_text(" , ,x") == ("x",)
