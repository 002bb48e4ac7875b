"""The nvdsanalytics export, checked field by field: the INI it writes is parsed with
configparser and each key compared to the zones file it came from."""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.analytics.deepstream import ExportError, export_nvdsanalytics, in_direction
from app.analytics.geometry import sides
from app.analytics.zones_file import LineSpec, ZonesConfig

ROOT = Path(__file__).resolve().parents[2]
ZONES = {
    "lines": [
        {"name": "door", "a": [960, 100], "b": [960, 980]},
        {"name": "ramp", "a": [100.4, 700.6], "b": [900, 300]},
    ],
    "zones": [
        {"name": "queue", "polygon": [[1000, 200], [1800, 200], [1800, 900], [1400, 600], [1000, 900]]},
        {"name": "till", "polygon": [[10, 10], [300, 10], [300, 300]]},
    ],
    "size": [1920, 1080],
}


def parse(text: str) -> configparser.ConfigParser:
    ini = configparser.ConfigParser(interpolation=None)
    ini.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case, as GKeyFile's do
    ini.read_string(text)
    return ini


def integers(value: str) -> list[int]:
    return [int(v) for v in value.split(";")]


def test_every_key_matches_the_zones_file() -> None:
    config = ZonesConfig.from_dict(ZONES)
    ini = parse(export_nvdsanalytics(config).text)
    assert ini.sections() == ["property", "roi-filtering-stream-0", "line-crossing-stream-0"]
    assert dict(ini["property"]) == {
        "enable": "1",
        "config-width": "1920",
        "config-height": "1080",
        "osd-mode": "2",
        "display-font-size": "12",
    }
    roi = ini["roi-filtering-stream-0"]
    assert set(roi) == {"enable", "roi-queue", "roi-till", "inverse-roi", "class-id"}
    assert (roi["enable"], roi["inverse-roi"], roi["class-id"]) == ("1", "0", "-1")
    for zone in ZONES["zones"]:
        assert integers(roi[f"roi-{zone['name']}"]) == [round(v) for p in zone["polygon"] for v in p]
    lc = ini["line-crossing-stream-0"]
    assert set(lc) == {
        "enable",
        "line-crossing-door",
        "line-crossing-door-out",
        "line-crossing-ramp",
        "line-crossing-ramp-out",
        "class-id",
        "extended",
        "mode",
    }
    assert (lc["enable"], lc["class-id"], lc["extended"], lc["mode"]) == ("1", "-1", "0", "loose")
    for line in ZONES["lines"]:
        spec = LineSpec(str(line["name"]), tuple(line["a"]), tuple(line["b"]))  # type: ignore[arg-type]
        segment = [round(v) for v in (*line["a"], *line["b"])]
        for key, expected_side_change in (
            (f"line-crossing-{spec.name}", (1, -1)),
            (f"line-crossing-{spec.name}-out", (-1, 1)),
        ):
            values = integers(lc[key])
            assert len(values) == 8 and all(v >= 0 for v in values)  # what nvdsanalytics' parser takes
            assert values[4:] == segment  # the line, after the direction
            start, end = np.array(values[0:2], float), np.array(values[2:4], float)
            # The direction goes from one side of our line to the other: from + to - for `in`.
            assert tuple(sides(spec.a, spec.b, np.array([start, end])).tolist()) == expected_side_change
            # ... at right angles to it, through its middle.
            u = (end - start) / np.linalg.norm(end - start)
            assert abs(float(np.dot(u, in_direction(spec)))) == pytest.approx(1.0, abs=0.01)
            middle = (np.array(line["a"], float) + np.array(line["b"], float)) / 2
            assert np.linalg.norm((start + end) / 2 - middle) <= 1.5


def test_the_in_direction_of_a_vertical_line_drawn_downwards_is_left_to_right() -> None:
    assert in_direction(LineSpec("door", (320, 0), (320, 480))) == pytest.approx((1.0, 0.0))
    assert in_direction(LineSpec("door", (320, 480), (320, 0))) == pytest.approx((-1.0, 0.0))


def test_stream_index_classes_and_a_size_given() -> None:
    config = ZonesConfig.from_dict({k: v for k, v in ZONES.items() if k != "size"})
    with pytest.raises(ExportError, match="the source's size is not known"):
        export_nvdsanalytics(config)
    ini = parse(export_nvdsanalytics(config, size=(1280, 720), stream=3, class_ids=(0, 2)).text)
    assert ini["property"]["config-width"] == "1280" and ini["property"]["config-height"] == "720"
    assert ini["roi-filtering-stream-3"]["class-id"] == "0;2"
    assert ini["line-crossing-stream-3"]["class-id"] == "0;2"


def test_names_and_points_nvdsanalytics_would_refuse_are_changed_and_said() -> None:
    config = ZonesConfig.from_dict(
        {
            "lines": [{"name": "front door", "a": [5, 0], "b": [5, 100]}],
            "zones": [{"name": "q=1", "polygon": [[-20, 0], [50, 0], [50, 50]]}],
        }
    )
    exported = export_nvdsanalytics(config, size=(100, 100))
    ini = parse(exported.text)
    assert integers(ini["roi-filtering-stream-0"]["roi-q_1"]) == [0, 0, 50, 0, 50, 50]
    assert "line-crossing-front_door" in ini["line-crossing-stream-0"]
    # Near the frame's left edge the direction arrow is cut at x = 0 and still points right.
    door = integers(ini["line-crossing-stream-0"]["line-crossing-front_door"])
    assert door[0] == 0 and door[2] > door[0]
    assert any("'front door' is written as 'front_door'" in n for n in exported.notes)
    assert any("zone 'q=1': (-20, 0) moved to (0, 0)" in n for n in exported.notes)


def test_two_names_that_would_collide_are_refused() -> None:
    config = ZonesConfig.from_dict(
        {"lines": [{"name": "a b", "a": [5, 0], "b": [5, 100]}, {"name": "a_b", "a": [9, 0], "b": [9, 100]}]}
    )
    with pytest.raises(ExportError, match="'a_b' and 'a b' would both be written as line-crossing-a_b"):
        export_nvdsanalytics(config, size=(100, 100))
    config = ZonesConfig.from_dict(
        {"lines": [{"name": "x", "a": [5, 0], "b": [5, 100]}, {"name": "x-out", "a": [9, 0], "b": [9, 100]}]}
    )
    with pytest.raises(ExportError, match="would both be written as line-crossing-x-out"):
        export_nvdsanalytics(config, size=(100, 100))


def run_zones(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "zones", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_the_command_writes_the_file_or_says_why_not(tmp_path: Path) -> None:
    zones = tmp_path / "zones.json"
    zones.write_text(json.dumps(ZONES))
    out = tmp_path / "config_nvdsanalytics.txt"
    done = run_zones("export", "--to", "deepstream", str(zones), "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        parse(out.read_text())
        and out.read_text() == export_nvdsanalytics(ZonesConfig.from_dict(ZONES), origin=str(zones)).text
    )
    shown = run_zones("export", "--to", "deepstream", str(zones), "--size", "640x360")
    assert shown.returncode == 0 and "config-width=640" in shown.stdout
    assert "warning:" in shown.stderr and "reaches outside the 640x360 frame" in shown.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lines": [{"name": "d", "a": [1, 1], "b": [1, 1]}]}))
    refused = run_zones("export", "--to", "deepstream", str(bad), "--size", "640x360")
    assert refused.returncode == 2 and f"{bad}: lines[0] 'd': a and b are the same point" in refused.stderr
    assert run_zones("export", "--to", "deepstream", str(zones), "--size", "640").returncode == 2
    checked = run_zones("check", str(zones))
    assert checked.returncode == 0
    assert json.loads(checked.stdout) == {
        "file": str(zones),
        "lines": ["door", "ramp"],
        "zones": ["queue", "till"],
        "size": [1920, 1080],
        "warnings": [],
    }
