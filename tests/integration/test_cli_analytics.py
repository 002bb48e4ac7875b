"""`infer --track --zones` and `--heatmap` as a user runs them, against the real server and its
bundled face detector, on videos of a real face moving along a path the test knows: the truth
(when the face crosses the line, how long it is in the zone) is worked out from that path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.media import back_and_forth, make_crossing_video

FPS = 30.0
LINE_X = 320  # a vertical line drawn top to bottom: `in` is left to right
ZONE_X = 400  # the zone: everything right of this
ZONES = {
    "lines": [{"name": "door", "a": [LINE_X, 0], "b": [LINE_X, 480]}],
    "zones": [{"name": "right", "polygon": [[ZONE_X, 0], [640, 0], [640, 480], [ZONE_X, 480]]}],
}


def truth_crossings(xs: list[float]) -> list[tuple[str, int]]:
    """(direction, the first frame on the far side) for each passage of the face's centre."""
    return [
        ("in" if xs[i] > LINE_X else "out", i)
        for i in range(1, len(xs))
        if (xs[i - 1] > LINE_X) != (xs[i] > LINE_X)
    ]


def truth_dwell_s(xs: list[float]) -> float:
    return sum(x >= ZONE_X for x in xs) / FPS


@pytest.fixture(scope="module")
def zones_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zones") / "zones.json"
    path.write_text(json.dumps(ZONES))
    return path


@pytest.fixture(scope="module")
def five_crossings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float]]:
    """Left to right three times and right to left twice, resting at each end; 345 frames."""
    xs = back_and_forth((140, 500, 140, 500, 140, 500), speed=8, hold=20)
    video = tmp_path_factory.mktemp("crossing") / "crossing.avi"
    make_crossing_video(video, xs, fps=FPS)
    return video, xs


def events_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if "event" in r]


def test_three_in_two_out_and_the_time_in_the_zone(
    triton: EmbeddedServer, zones_file: Path, five_crossings: tuple[Path, list[float]], tmp_path: Path
) -> None:
    video, xs = five_crossings
    heat = tmp_path / "heat.png"
    proc = run_cli(
        "infer",
        "--url",
        triton.grpc_url,
        "--track",
        "--zones",
        str(zones_file),
        "--heatmap",
        str(heat),
        str(video),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    frames = [r for r in records if "event" not in r]
    assert [r["frame"] for r in frames] == list(range(len(xs)))
    tracks = {d["track_id"] for r in frames for d in r["detections"]}
    assert len(tracks) == 1, f"the tracker kept one face as one track: {tracks}"

    # One event per crossing, in the truth's directions, on the frames the face crossed.
    crossed = [e for e in events_of(records) if e["event"] == "line_crossed"]
    truth = truth_crossings(xs)
    assert [d for d, _f in truth] == ["in", "out", "in", "out", "in"]
    assert [e["direction"] for e in crossed] == [d for d, _f in truth]
    for event, (_direction, frame) in zip(crossed, truth, strict=True):
        assert abs(event["frame"] - frame) <= 2, (event, frame)
        assert event["time_s"] == pytest.approx(event["frame"] / FPS, abs=1e-3)
        assert (event["line"], event["label"], event["source"]) == ("door", "face", str(video))
    assert summary["analytics"]["lines"] == {
        "door": {"in": 3, "out": 2, "by_class": {"face": {"in": 3, "out": 2}}}
    }

    # Three visits (the last ends with the video); their time within 10% of the truth.
    zone = summary["analytics"]["zones"]["right"]
    assert zone["entries"] == 3 and zone["max_occupancy"] == 1
    truth_s = truth_dwell_s(xs)
    assert abs(zone["total_dwell_s"] - truth_s) <= 0.1 * truth_s, (zone, truth_s)
    assert zone["dwell_s_by_track"] == {str(tracks.pop()): zone["total_dwell_s"]}
    visits = [e for e in events_of(records) if e["event"] in ("zone_entered", "zone_left")]
    assert [e["event"] for e in visits] == ["zone_entered", "zone_left"] * 3
    assert [e["reason"] for e in visits if e["event"] == "zone_left"] == ["left", "left", "ended"]
    assert sum(e["dwell_s"] for e in visits if "dwell_s" in e) == pytest.approx(
        zone["total_dwell_s"], abs=0.01
    )

    # Each event comes after the record of the frame that decided it, never before its own frame.
    last_frame = -1
    for record in records:
        if "event" in record:
            assert record["frame"] <= last_frame
        else:
            last_frame = record["frame"]

    # The heat map: a PNG of the video's size, hottest where the face rested.
    assert summary["heatmaps"] == {str(video): str(heat)}
    picture = cv2.imread(str(heat))
    assert picture is not None and picture.shape == (480, 640, 3)


def test_several_videos_are_counted_each_and_added_up(
    triton: EmbeddedServer, zones_file: Path, tmp_path: Path
) -> None:
    xs = back_and_forth((140, 500), speed=10, hold=6)  # one crossing in, one visit
    first, second = tmp_path / "a" / "clip.avi", tmp_path / "b" / "clip.avi"
    for video in (first, second):
        video.parent.mkdir()
        make_crossing_video(video, xs, fps=FPS)
    heat = tmp_path / "heat"
    proc = run_cli(
        "infer", "--url", triton.grpc_url, "--track", "--zones", str(zones_file), "--heatmap", str(heat),
        str(first), str(second),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    analytics = summary["analytics"]
    by_source = analytics["by_source"]
    assert set(by_source) == {str(first), str(second)}
    for each in by_source.values():
        assert each["lines"]["door"]["in"] == 1 and each["zones"]["right"]["entries"] == 1
        assert abs(each["zones"]["right"]["total_dwell_s"] - truth_dwell_s(xs)) <= 0.1 * truth_dwell_s(xs)
    assert analytics["lines"]["door"] == {"in": 2, "out": 0, "by_class": {"face": {"in": 2, "out": 0}}}
    total = analytics["zones"]["right"]
    assert total["entries"] == 2 and total["max_occupancy"] == 1 and "dwell_s_by_track" not in total
    assert total["total_dwell_s"] == pytest.approx(
        sum(s["zones"]["right"]["total_dwell_s"] for s in by_source.values()), abs=0.002
    )
    assert {e["source"] for e in events_of(records)} == {str(first), str(second)}
    assert summary["heatmaps"] == {str(first): str(heat / "clip.png"), str(second): str(heat / "clip-2.png")}
    assert all(cv2.imread(p) is not None for p in summary["heatmaps"].values())


def test_with_another_format_the_events_go_with_the_summary(
    triton: EmbeddedServer, zones_file: Path, tmp_path: Path
) -> None:
    xs = back_and_forth((140, 500), speed=10, hold=6)
    video = tmp_path / "clip.avi"
    make_crossing_video(video, xs, fps=FPS)
    coco = tmp_path / "coco.json"
    proc = run_cli(
        "infer", "--url", triton.grpc_url, "--track", "--zones", str(zones_file),
        "--format", "coco", "--output", str(coco), str(video),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    assert records and all("event" in r for r in records)  # the frames are in the COCO file
    assert [r["event"] for r in records] == ["line_crossed", "zone_entered", "zone_left"]
    assert summary["analytics"]["lines"]["door"]["in"] == 1 and coco.is_file()


def test_a_heat_map_needs_no_tracks(triton: EmbeddedServer, tmp_path: Path) -> None:
    xs = back_and_forth((140, 500), speed=10, hold=6)
    video = tmp_path / "walk.avi"
    make_crossing_video(video, xs, fps=FPS)
    image = tmp_path / "still.png"
    cv2.imwrite(str(image), _first_frame(video))
    proc = run_cli(
        "infer", "--url", triton.grpc_url, "--heatmap", str(tmp_path / "maps"), str(video), str(image)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    assert not events_of(records) and "analytics" not in summary
    assert summary["heatmaps"] == {str(video): str(tmp_path / "maps" / "walk.png")}  # the image takes no part
    picture = cv2.imread(summary["heatmaps"][str(video)])
    background = _first_frame(video)
    # Coloured along the face's path (the anchor's row), the top of the frame untouched.
    row = round(float(np.median([r["detections"][0]["box"][3] for r in records if r.get("detections")])))
    assert np.abs(picture[row, 200:450].astype(int) - background[row, 200:450].astype(int)).max() > 40
    assert np.array_equal(picture[:40], background[:40])


def _first_frame(video: Path) -> np.ndarray:
    capture = cv2.VideoCapture(str(video))
    ok, frame = capture.read()
    capture.release()
    assert ok
    return frame


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--zones", "ZONES"], "--zones needs --track: lines and zones count tracked objects"),
        (["--track", "--zones", "BAD"], "lines[0] 'door': a and b are the same point"),
        (["--track", "--zones", "MISSING"], "missing.json: not found"),
        (["--heatmap", "TWO.png", "SECOND"], "one file, but the inputs hold 2 videos: give a folder"),
        (["--heatmap-window", "60"], "--heatmap-window needs --heatmap PATH"),
    ],
)
def test_usage_errors_are_named_before_any_request(
    triton: EmbeddedServer,
    zones_file: Path,
    five_crossings: tuple[Path, list[float]],
    tmp_path: Path,
    arguments: list[str],
    message: str,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lines": [{"name": "door", "a": [1, 2], "b": [1, 2]}]}))
    second = tmp_path / "second.avi"
    second.symlink_to(five_crossings[0])
    given = {
        "ZONES": str(zones_file),
        "BAD": str(bad),
        "MISSING": str(tmp_path / "missing.json"),
        "TWO.png": str(tmp_path / "two.png"),
        "SECOND": str(second),
    }
    proc = run_cli(
        "infer", "--url", triton.grpc_url, *[given.get(a, a) for a in arguments], str(five_crossings[0])
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr and proc.stdout == ""
    assert "input(s) -> model" not in proc.stderr  # nothing was sent
