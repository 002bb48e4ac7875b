"""`python -m app compare` and `infer --track` as a user runs them, against the real server."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cv2
import pytest
import skimage.data

from app.pipeline.tracking import tracked_fraction
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import ROOT, bgr, parse, run_cli
from tests.media import make_face_video

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real photographs of several sizes (faces in some), one nested, one corrupt, one text file."""
    folder = tmp_path_factory.mktemp("photos")
    astronaut = skimage.data.astronaut()
    cv2.imwrite(str(folder / "astronaut.png"), bgr(astronaut))
    cv2.imwrite(str(folder / "astronaut_small.jpg"), bgr(cv2.resize(astronaut, (320, 320))))
    cv2.imwrite(str(folder / "wide.png"), bgr(cv2.resize(astronaut, (800, 400))))
    cv2.imwrite(str(folder / "coffee.png"), bgr(skimage.data.coffee()))
    (folder / "sub").mkdir()
    cv2.imwrite(str(folder / "sub" / "chelsea.png"), bgr(skimage.data.chelsea()))
    (folder / "notes.txt").write_text("skipped")
    return folder


def records_by_source(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {Path(r["source"]).name: r for r in records}


def test_a_model_against_itself_agrees_fully(triton: EmbeddedServer, photos: Path) -> None:
    # B on the "other" server (the same one, named apart): two sessions, two request streams.
    proc = run_cli(
        "compare", "--url", triton.grpc_url, "--url-b", triton.grpc_url,
        "--model", "face_detector", "--model", "face_detector", str(photos),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    by_name = records_by_source(records)
    assert set(by_name) == {"astronaut.png", "astronaut_small.jpg", "wide.png", "coffee.png", "chelsea.png",
                            "notes.txt"}  # fmt: skip
    faces = 0
    for name, record in by_name.items():
        assert set(record) == {"source", "frame", "a", "b", "matched", "only_a", "only_b"}
        if name == "notes.txt":
            assert record["a"]["status"] == record["b"]["status"] == "skipped"
            continue
        a, b = record["a"], record["b"]
        assert a["ok"] and b["ok"] and a["request_id"] != b["request_id"]
        assert record["only_a"] == [] and record["only_b"] == []
        assert [m[:2] for m in record["matched"]] == [[i, i] for i in range(len(a["detections"]))]
        assert all(m[2] == 1.0 for m in record["matched"])
        faces += len(a["detections"])
    assert faces >= 3, "the astronaut's face in three images at least"
    assert summary["agreement"] == 1.0
    assert summary["total"] == 6 and summary["skipped"] == 1 and summary["failed"] == 0
    assert summary["matched"] == faces and summary["only_a"] == summary["only_b"] == 0
    for side in ("a", "b"):
        figures = summary[side]
        assert figures["model"] == "face_detector" and figures["ok"] == 5
        assert 0 < figures["p50_ms"] <= figures["p95_ms"] and figures["throughput"] > 0
        assert figures["detections_per_image"] == pytest.approx(faces / 5, abs=1e-3)
    assert summary["most_disagreement"] == []


def test_the_planted_differences_of_two_versions_are_counted_exactly(
    triton: EmbeddedServer, photos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "compare.jsonl"
    proc = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "fixed_versions", "--version-a", "1",
        "--version-b", "2", "--output", str(out), str(photos),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == ""
    records, summary = parse(out.read_text())
    images = [r for r in records if r["a"]["status"] != "skipped"]
    assert len(images) == 5
    for record in images:
        a, b = record["a"]["detections"], record["b"]["detections"]
        assert len(a) == 3 and len(b) == 2
        # Version 2: box 0 moved 10 px (IoU 0.905: matched), box 1 moved 100 px (IoU 1/3: not),
        # box 2 dropped.
        assert [m[:2] for m in record["matched"]] == [[0, 0]], record["source"]
        assert record["matched"][0][2] == pytest.approx(190 / 210, abs=0.02)
        assert record["only_a"] == [1, 2] and record["only_b"] == [1]
    assert (summary["matched"], summary["only_a"], summary["only_b"]) == (5, 10, 5)
    assert summary["agreement"] == 0.25
    assert summary["a"]["version"] == "1" and summary["b"]["version"] == "2"
    worst = summary["most_disagreement"]
    assert len(worst) == 5 and all(w["only_a"] == 2 and w["only_b"] == 1 for w in worst)

    relaxed = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "fixed_versions", "--version-a", "1",
        "--version-b", "2", "--match-iou", "0.3", str(photos / "astronaut.png"),
    )  # fmt: skip
    assert relaxed.returncode == 0, relaxed.stderr[-2000:]
    (record,), summary = parse(relaxed.stdout)
    assert sorted(m[:2] for m in record["matched"]) == [[0, 0], [1, 1]]
    assert record["only_a"] == [2] and record["only_b"] == []
    assert summary["agreement"] == pytest.approx(2 / 3, abs=1e-4)


def test_a_version_against_itself_agrees_fully(triton: EmbeddedServer, photos: Path) -> None:
    proc = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "fixed_versions", "--version-a", "2",
        "--version-b", "2", str(photos / "coffee.png"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,), summary = parse(proc.stdout)
    assert len(record["matched"]) == 2 and summary["agreement"] == 1.0


def test_a_bad_input_fails_on_both_sides_and_the_others_still_compare(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    good = tmp_path / "good.png"
    cv2.imwrite(str(good), bgr(skimage.data.astronaut()))
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff" + b"\x00" * 100)
    empty = tmp_path / "empty.png"  # there, but nothing to read
    empty.write_bytes(b"")
    proc = run_cli("compare", "--url", triton.grpc_url, str(good), str(broken), str(empty))
    assert proc.returncode == 1, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    by_name = records_by_source(records)
    assert by_name["good.png"]["a"]["ok"] and by_name["good.png"]["b"]["ok"]
    for name in ("broken.jpg", "empty.png"):
        record = by_name[name]
        assert not record["a"]["ok"] and not record["b"]["ok"] and name in record["a"]["error"]
        assert record["matched"] == record["only_a"] == record["only_b"] == []
    assert summary["failed"] == 2 and summary["ok"] == 1
    assert "broken.jpg" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--model", "face_detector", "--model", "no_such_model"],
            "model B: model 'no_such_model' not found",
        ),
        (["--model", "fixed_versions", "--version-a", "3"], "model A: model 'fixed_versions' version 3"),
        (["--model", "a", "--model", "b", "--model", "c"], "--model is given 3 times"),
        (["--match-iou", "0"], "--match-iou"),
        (["--score", "2"], "--score"),
    ],
)
def test_usage_and_connection_errors_exit_2(
    triton: EmbeddedServer, photos: Path, args: list[str], message: str
) -> None:
    proc = run_cli("compare", "--url", triton.grpc_url, *args, str(photos))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr
    assert proc.stdout == ""


def test_a_version_not_ready_names_the_ones_that_are(triton: EmbeddedServer, photos: Path) -> None:
    proc = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "fixed_versions", "--version-b", "7", str(photos)
    )
    assert proc.returncode == 2
    assert "version 7 is not ready" in proc.stderr and "versions ready there: 1, 2" in proc.stderr


def test_infer_track_keeps_one_id_for_a_moving_face(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "face.avi"
    make_face_video(video, frames=90, fps=30, size=(640, 480))
    image = tmp_path / "still.png"
    cv2.imwrite(str(image), bgr(skimage.data.astronaut()))
    proc = run_cli("infer", "--url", triton.grpc_url, "--track", "--concurrency", "8", str(video), str(image))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    frames = [r for r in records if r["frame"] is not None]
    assert [r["frame"] for r in frames] == list(range(90)), "a tracked video's records come in frame order"
    ids = [[d["track_id"] for d in r["detections"]] for r in frames]
    detected = [i for i in ids if i]
    assert len(detected) >= 80, f"the face is found on most frames ({len(detected)} of 90)"
    assert tracked_fraction(ids) >= 0.95, collections.Counter(i for frame in ids for i in frame)
    (still,) = [r for r in records if r["frame"] is None]
    assert still["detections"] and all("track_id" not in d for d in still["detections"])
    tracks = summary["tracks"][str(video)]
    assert tracks["tracks"] >= 1 and tracks["detections"] == sum(len(i) for i in ids)


def test_infer_track_without_its_library_says_so_before_any_request(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    """A tracking library that does not load (e.g. a bundle missing part of SciPy) is a usage
    error named up front, never a run whose results vanish in the tracker (0 records, exit 0)."""
    broken = tmp_path / "site"
    (broken / "norfair").mkdir(parents=True)
    (broken / "norfair" / "__init__.py").write_text("raise ImportError('libscipy_openblas.so: no')\n")
    video = tmp_path / "face.avi"
    make_face_video(video, frames=5, fps=30, size=(320, 240))
    proc = subprocess.run(
        [sys.executable, "-m", "app", "infer", "--track", "--url", triton.grpc_url, str(video)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), str(ROOT)])},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--track: the tracking library (Norfair, SciPy) cannot be loaded" in proc.stderr
    assert "libscipy_openblas.so" in proc.stderr and proc.stdout == ""


def test_infer_without_track_writes_no_track_ids(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "face.avi"
    make_face_video(video, frames=10, fps=30, size=(320, 240))
    proc = run_cli("infer", "--url", triton.grpc_url, str(video))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    assert all("track_id" not in d for r in records for d in r["detections"])
    assert "tracks" not in summary


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("fixed_pose", "keypoints"),
        ("fixed_segment", "mask"),
        ("fixed_yolov8", "box"),
        ("fixed_semantic", "masks"),
        ("fixed_classify", "classes"),
    ],
)
def test_every_model_kind_agrees_with_itself(
    triton: EmbeddedServer, photos: Path, model: str, kind: str
) -> None:
    proc = run_cli(
        "compare", "--url", triton.grpc_url, "--model", model, str(photos / "astronaut.png"),
        str(photos / "wide.png"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    records, summary = parse(proc.stdout)
    assert len(records) == 2 and summary["agreement"] == 1.0 and summary["matched"] >= 2
    for record in records:
        a = record["a"]
        if kind == "masks":  # semantic: one mask per class present, matched per class by mask IoU
            items = a["masks"]
        elif kind == "classes":  # classifiers: the top class
            items = a["classes"][:1]
        else:
            items = a["detections"]
            assert all(kind in d for d in items) or kind == "box"
        assert items and [m[:2] for m in record["matched"]] == [[i, i] for i in range(len(items))]
        assert all(m[2] == 1.0 for m in record["matched"])
        assert record["only_a"] == record["only_b"] == []


def test_tracking_carries_keypoints_and_masks(triton: EmbeddedServer, tmp_path: Path) -> None:
    video = tmp_path / "face.avi"
    make_face_video(video, frames=8, fps=30, size=(320, 240))
    for model, part in (("fixed_pose", "keypoints"), ("fixed_segment", "mask")):
        proc = run_cli("infer", "--url", triton.grpc_url, "--model", model, "--track", str(video))
        assert proc.returncode == 0, proc.stderr[-2000:]
        records, summary = parse(proc.stdout)
        # Fixed outputs: the same two objects on every frame keep ids 1 and 2 throughout.
        assert all(sorted(d["track_id"] for d in r["detections"]) == [1, 2] for r in records), model
        assert all(part in d for r in records for d in r["detections"])
        assert summary["tracks"][str(video)]["tracks"] == 2
