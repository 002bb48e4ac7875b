"""The zones file: read, written back, and every problem named with the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.analytics.zones_file import LineSpec, ZonesConfig, ZonesFileError, ZoneSpec, load_zones, save_zones

GOOD = {
    "lines": [{"name": "door", "a": [320, 0], "b": [320, 480.5]}],
    "zones": [{"name": "queue", "polygon": [[400, 0], [640, 0], [640, 480], [400, 480]]}],
}


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "zones.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_good_file_is_read_and_written_back(tmp_path: Path) -> None:
    config = load_zones(write(tmp_path, {**GOOD, "size": [640, 480]}))
    assert config.lines == (LineSpec("door", (320.0, 0.0), (320.0, 480.5)),)
    assert config.zones == (ZoneSpec("queue", ((400.0, 0.0), (640.0, 0.0), (640.0, 480.0), (400.0, 480.0))),)
    assert config.size == (640, 480)
    copy = tmp_path / "copy.json"
    save_zones(config, copy)
    assert load_zones(copy) == config
    assert json.loads(copy.read_text())["lines"] == [{"name": "door", "a": [320.0, 0.0], "b": [320.0, 480.5]}]


def test_lines_only_or_zones_only(tmp_path: Path) -> None:
    assert load_zones(write(tmp_path, {"lines": GOOD["lines"]})).zones == ()
    assert load_zones(write(tmp_path, {"zones": GOOD["zones"]})).lines == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "not JSON (Expecting property name"),
        ([1, 2], "expected an object"),
        ({}, "no lines and no zones: nothing to count"),
        ({"line": []}, "the file: unknown field 'line' (the fields are 'lines', 'zones', 'size')"),
        ({"lines": {"name": "door"}}, "lines: expected a list, got an object"),
        ({"lines": [{"a": [0, 0], "b": [1, 1]}]}, "lines[0].name: expected a non-empty name, got null"),
        ({"lines": [{"name": " ", "a": [0, 0], "b": [1, 1]}]}, "lines[0].name: expected a non-empty name"),
        (
            {"lines": [{"name": "door", "a": [5, 5], "b": [5, 5]}]},
            "lines[0] 'door': a and b are the same point [5.0, 5.0]: a line of zero length",
        ),
        (
            {"lines": [{"name": "door", "a": [5, "6"], "b": [1, 1]}]},
            "lines[0] 'door'.a: y is not a number: \"6\"",
        ),
        (
            {"lines": [{"name": "door", "a": [5, True], "b": [1, 1]}]},
            "lines[0] 'door'.a: y is not a number: true",
        ),
        ({"lines": [{"name": "door", "a": [5], "b": [1, 1]}]}, "lines[0] 'door'.a: expected a point [x, y]"),
        ({"lines": [{"name": "door", "b": [1, 1]}]}, "lines[0] 'door'.a: expected a point [x, y], got null"),
        (
            {"lines": [{"name": "door", "a": [0, 0], "b": [1, 1], "colour": "red"}]},
            "lines[0]: unknown field 'colour'",
        ),
        (
            {"zones": [{"name": "q", "polygon": [[0, 0], [10, 0]]}]},
            "zones[0] 'q'.polygon: 2 point(s): a zone needs at least 3",
        ),
        (
            {"zones": [{"name": "q", "polygon": [[0, 0], [10, 10], [20, 20]]}]},
            "zones[0] 'q'.polygon: its points are on one line: the zone has no area",
        ),
        (
            {"zones": [{"name": "q", "polygon": [[0, 0], [10, 0], [10, "x"]]}]},
            "zones[0] 'q'.polygon[2]: y is not a number",
        ),
        (
            {"zones": [{"name": "q", "polygon": "0,0 1,1"}]},
            "zones[0] 'q'.polygon: expected a list of [x, y] points",
        ),
        (
            {"lines": [GOOD["lines"][0], {"name": "door", "a": [0, 0], "b": [0, 9]}]},
            "lines[1]: line name 'door' is already used by lines[0]",
        ),
        (
            {"zones": [GOOD["zones"][0], GOOD["zones"][0]]},
            "zones[1]: zone name 'queue' is already used by zones[0]",
        ),
        ({**GOOD, "size": [640, 0]}, "size: expected [width, height] in whole pixels, got [640, 0]"),
    ],
)
def test_each_problem_names_the_file_and_the_field(tmp_path: Path, data: Any, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(ZonesFileError) as error:
        load_zones(path)
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)


def test_a_line_and_a_zone_may_share_a_name(tmp_path: Path) -> None:
    data = {
        "lines": [{"name": "door", "a": [0, 0], "b": [0, 9]}],
        "zones": [{**GOOD["zones"][0], "name": "door"}],
    }
    assert [z.name for z in load_zones(write(tmp_path, data)).zones] == ["door"]


def test_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ZonesFileError, match=r"nope\.json: not found"):
        load_zones(tmp_path / "nope.json")
    with pytest.raises(ZonesFileError, match="is a folder, not a file"):
        load_zones(tmp_path)
    with pytest.raises(ZonesFileError, match="a device, not a regular file"):
        load_zones("/dev/zero")


def test_points_outside_the_frame_are_warnings() -> None:
    config = ZonesConfig.from_dict(GOOD)
    assert config.outside(640, 480.5) == []  # type: ignore[arg-type]  # edges are inside
    assert config.outside(600, 400) == [
        "lines[0] 'door' reaches outside the 600x400 frame",
        "zones[0] 'queue' reaches outside the 600x400 frame",
    ]
