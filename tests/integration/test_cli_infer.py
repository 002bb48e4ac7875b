"""`python -m app infer` as a user runs it: a real process against the real test server."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from app.server.ports import free_ports
from tests.cli_runner import run_cli_in_process
from tests.integration.face_check import iou
from tests.media import face_box, face_scale_for, make_face_video
from tests.strict_json import strict_loads

ROOT = Path(__file__).resolve().parents[2]
# The astronaut's face in skimage.data.astronaut() (512x512), loosely.
FACE_REGION = (180, 82, 274, 176)


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A command's status and output, run in this process (tests/cli_runner.py); `timeout` is
    pytest-timeout's there."""
    del timeout
    return run_cli_in_process(*args)


def parse(stdout: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = [strict_loads(line) for line in stdout.splitlines() if line.strip()]
    assert lines and "summary" in lines[-1], stdout[-2000:]
    assert all("summary" not in r for r in lines[:-1])
    return lines[:-1], lines[-1]["summary"]


def in_input_order(records: list[dict[str, Any]], paths: list[Path]) -> list[dict[str, Any]]:
    """`infer` writes a record as its request ends (with requests in flight, not always in
    the inputs' order): the records in the order of `paths`, one each."""
    where = {str(p): i for i, p in enumerate(paths)}
    ordered = sorted(records, key=lambda r: where[r["source"]])
    assert [r["source"] for r in ordered] == [str(p) for p in paths]
    return ordered


def bgr(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)


def astronaut_coffee_and_crop(folder: Path, columns: slice) -> list[Path]:
    """skimage's astronaut and coffee, and a crop of the astronaut of odd sizes (rows 37:450,
    `columns`): the letterbox's odd pixel."""
    out = []
    for name in ("astronaut", "coffee"):
        path = folder / f"{name}.png"
        cv2.imwrite(str(path), bgr(getattr(skimage.data, name)()))
        out.append(path)
    crop = folder / "astronaut-crop.png"
    cv2.imwrite(str(crop), bgr(skimage.data.astronaut())[37:450, columns])
    return [*out, crop]


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Images of several kinds (the astronaut each time), one without faces, one corrupt."""
    folder = tmp_path_factory.mktemp("mixed")
    photo = skimage.data.astronaut()
    cv2.imwrite(str(folder / "rgb.png"), bgr(photo))
    cv2.imwrite(str(folder / "photo.jpg"), bgr(photo))
    cv2.imwrite(str(folder / "gray.png"), cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY))
    rgba = cv2.cvtColor(photo, cv2.COLOR_RGB2BGRA)
    rgba[..., 3] = 200
    cv2.imwrite(str(folder / "rgba.png"), rgba)
    cv2.imwrite(str(folder / "deep16.png"), bgr(photo).astype(np.uint16) * 257)
    ok, jpeg = cv2.imencode(".jpg", bgr(photo))
    assert ok
    (folder / "renamed.dat").write_bytes(jpeg.tobytes())  # an image by content, not by name
    (folder / "notes.txt").write_text("not an image: skipped inside folders")
    nested = folder / "sub" / "deeper"
    nested.mkdir(parents=True)
    cv2.imwrite(str(nested / "nested.png"), bgr(photo))
    cv2.imwrite(str(folder / "sub" / "coffee.png"), bgr(skimage.data.coffee()))
    (folder / "corrupt.jpg").write_bytes(jpeg.tobytes()[:40] + b"\x00" * 200)
    return folder


ASTRONAUTS = {"rgb.png", "photo.jpg", "gray.png", "rgba.png", "deep16.png", "renamed.dat", "nested.png"}


@pytest.fixture(scope="module")
def mixed_run(triton: EmbeddedServer, mixed_folder: Path) -> subprocess.CompletedProcess[str]:
    # (A path that does not exist is refused before the run: tests/integration/test_cli_inputs.py.)
    return run_cli("infer", "--url", triton.grpc_url, "--concurrency", "4", str(mixed_folder))


def test_folder_of_mixed_images_gives_one_record_each(
    mixed_run: subprocess.CompletedProcess[str], mixed_folder: Path
) -> None:
    assert mixed_run.returncode == 1, mixed_run.stderr
    records, summary = parse(mixed_run.stdout)
    names = sorted(Path(r["source"]).name for r in records)
    assert names == sorted([*ASTRONAUTS, "coffee.png", "corrupt.jpg", "notes.txt"])
    assert summary["total"] == len(records) == 10
    assert summary["ok"] == 8 and summary["failed"] == 1 and summary["skipped"] == 1
    statuses = {Path(r["source"]).name: r["status"] for r in records}
    assert statuses["notes.txt"] == "skipped" and statuses["corrupt.jpg"] == "failed"
    assert summary["seconds"] > 0 and summary["throughput"] > 0
    ids = [r["request_id"] for r in records if r["ok"]]
    assert len(set(ids)) == len(ids) == 8


def test_bad_inputs_are_failed_records_naming_the_file(mixed_run: subprocess.CompletedProcess[str]) -> None:
    records, _ = parse(mixed_run.stdout)
    failed = {Path(r["source"]).name: r for r in records if r["status"] == "failed"}
    assert set(failed) == {"corrupt.jpg"}
    assert "corrupt.jpg" in failed["corrupt.jpg"]["error"]
    assert "corrupt" in failed["corrupt.jpg"]["error"].split("corrupt.jpg", 1)[1]
    for r in failed.values():
        assert r["detections"] == [] and r["frame"] is None
        assert r["error_kind"] == "bad_input"  # scripts decide on the kind, not on the text
    skipped = next(r for r in records if r["status"] == "skipped")
    assert skipped["error_kind"] == "skipped"
    assert all("error_kind" not in r for r in records if r["ok"])  # ok records are unchanged
    assert "corrupt.jpg" in mixed_run.stderr  # failures are echoed with the progress


def test_the_face_is_found_in_every_kind_of_image(mixed_run: subprocess.CompletedProcess[str]) -> None:
    records, _ = parse(mixed_run.stdout)
    by_name = {Path(r["source"]).name: r for r in records}
    for name in ASTRONAUTS:
        r = by_name[name]
        assert r["ok"] and r["error"] is None, r
        assert (r["width"], r["height"]) == (512, 512)
        assert len(r["detections"]) == 1, (name, r["detections"])
        det = r["detections"][0]
        assert det["label"] == "face" and det["class_id"] == 0
        x1, y1, x2, y2 = det["box"]
        assert 0 <= x1 < x2 <= 512 and 0 <= y1 < y2 <= 512
        assert iou(np.array(det["box"]), np.array(FACE_REGION, float)) > 0.6, (name, det)
    assert by_name["coffee.png"]["ok"] and by_name["coffee.png"]["detections"] == []


def test_sources_are_the_paths_as_given_and_found(
    mixed_run: subprocess.CompletedProcess[str], mixed_folder: Path
) -> None:
    records, _ = parse(mixed_run.stdout)
    sources = {r["source"] for r in records}
    assert str(mixed_folder / "sub" / "deeper" / "nested.png") in sources


def test_a_video_gives_one_record_per_frame_following_the_face(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    video = tmp_path / "walk.avi"
    size = (320, 240)
    positions = make_face_video(video, frames=20, fps=10, size=size)
    done = run_cli("infer", "--url", triton.grpc_url, str(video))
    assert done.returncode == 0, done.stderr
    records, summary = parse(done.stdout)
    assert sorted(r["frame"] for r in records) == list(range(20))
    assert summary == {**summary, "total": 20, "ok": 20, "failed": 0}
    scale = face_scale_for(size)
    for r in records:
        assert r["source"] == str(video) and (r["width"], r["height"]) == size
        assert len(r["detections"]) == 1, r
        expected = np.array(face_box(positions[r["frame"]], scale), float)
        assert iou(np.array(r["detections"][0]["box"]), expected) > 0.4, (r["frame"], r["detections"])


def test_output_file_gets_the_records_and_stdout_stays_empty(triton: EmbeddedServer, tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), bgr(skimage.data.astronaut()))
    out = tmp_path / "out" / "results.jsonl"
    out.parent.mkdir()
    done = run_cli("infer", "--url", triton.grpc_url, "--output", str(out), str(image))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    records, summary = parse(out.read_text())
    assert len(records) == 1 and records[0]["source"] == str(image) and records[0]["ok"]
    assert summary["total"] == 1 and summary["ok"] == 1


def test_labels_and_profile_files_override_the_model(triton: EmbeddedServer, tmp_path: Path) -> None:
    image = tmp_path / "a.jpg"
    cv2.imwrite(str(image), bgr(skimage.data.astronaut()))
    labels = tmp_path / "labels.txt"
    labels.write_text("person\n")
    done = run_cli("infer", "--url", triton.grpc_url, "--labels", str(labels), str(image))
    assert done.returncode == 0, done.stderr
    (record,), _ = parse(done.stdout)
    assert [d["label"] for d in record["detections"]] == ["person"]

    # The astronaut's face scores ~0.92: a threshold above it leaves nothing.
    profile = tmp_path / "strict.toml"
    profile.write_text('labels = ["someone"]\n[postprocess]\nscore_threshold = 0.99\n')
    done = run_cli("infer", "--url", triton.grpc_url, "--profile", str(profile), str(image))
    assert done.returncode == 0, done.stderr
    (record,), _ = parse(done.stdout)
    assert record["ok"] and record["detections"] == []

    profile.write_text('labels = ["someone"]\n[postprocess]\nscore_threshold = 0.5\n')
    done = run_cli("infer", "--url", triton.grpc_url, "--profile", str(profile), str(image))
    (record,), _ = parse(done.stdout)
    assert [d["label"] for d in record["detections"]] == ["someone"]


def test_bad_profile_file_is_a_usage_error(triton: EmbeddedServer, tmp_path: Path) -> None:
    profile = tmp_path / "bad.toml"
    profile.write_text("[input]\ncolour = 3\n")
    done = run_cli("infer", "--url", triton.grpc_url, "--profile", str(profile), str(tmp_path))
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "colour" in done.stderr
    assert done.stdout == ""


def test_nothing_listening_is_exit_2_with_a_hint(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    done = run_cli("infer", "--url", f"127.0.0.1:{port}", str(tmp_path))
    assert done.returncode == 2
    assert "nothing is listening" in done.stderr and f"127.0.0.1:{port}" in done.stderr
    assert done.stdout == ""


def test_model_that_is_not_ready_is_exit_2_with_its_reason(triton: EmbeddedServer, tmp_path: Path) -> None:
    done = run_cli("infer", "--url", triton.grpc_url, "--model", "broken_at_load", str(tmp_path))
    assert done.returncode == 2
    assert "broken_at_load" in done.stderr and "weights file missing" in done.stderr


def test_server_side_failures_are_failed_records(triton: EmbeddedServer, tmp_path: Path) -> None:
    for i in range(3):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((32, 32, 3), 10 * i, np.uint8))
    done = run_cli("infer", "--url", triton.grpc_url, "--model", "failing", str(tmp_path))
    assert done.returncode == 1
    records, summary = parse(done.stdout)
    assert len(records) == 3 and summary["failed"] == 3 and summary["ok"] == 0
    assert all("inference always fails" in r["error"] for r in records)
    assert all(r["error_kind"] == "server" for r in records)


def test_a_single_unreadable_file_reports_no_throughput(triton: EmbeddedServer, tmp_path: Path) -> None:
    """No request was made: the throughput is 0, not one record over a fraction of a millisecond."""
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    done = run_cli("infer", "--url", triton.grpc_url, str(bad))
    assert done.returncode == 1
    (record,), summary = parse(done.stdout)
    assert record["status"] == "failed" and record["request_id"] is None
    assert summary["total"] == 1 and summary["failed"] == 1
    assert summary["throughput"] == 0.0, summary


def test_ctrl_c_cancels_writes_the_summary_and_exits(triton: EmbeddedServer, tmp_path: Path) -> None:
    # slow_faces sleeps pixel[0,0,0] x 10 ms per batch: 2 s per image here.
    for i in range(6):
        cv2.imwrite(str(tmp_path / f"slow{i}.png"), np.full((16, 16, 3), 200, np.uint8))
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "app", "infer", "--url", triton.grpc_url, "--model", "slow_faces"),
            *("--concurrency", "2", "--timeout", "60", str(tmp_path)),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "N input(s) ... -> model": requests are being sent
        assert "input(s)" in line, line
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):  # also when it timed out: no pipe left to the GC
            if pipe is not None:
                pipe.close()
    assert proc.returncode == 130, stderr
    records, summary = parse(stdout)
    assert summary["total"] == len(records) and summary["ok"] == 0
    assert records and all(r["error"] and "cancel" in r["error"] for r in records)
    assert all(r["error_kind"] == "cancelled" for r in records)
    assert "interrupted" in stderr


def _processes_with(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_without_url_the_embedded_server_runs_and_is_gone_after(tmp_path: Path) -> None:
    image = tmp_path / "a.jpg"
    cv2.imwrite(str(image), bgr(skimage.data.astronaut()))
    done = run_cli("infer", str(image), timeout=240)
    assert done.returncode == 0, done.stderr
    (record,), _ = parse(done.stdout)
    assert record["ok"] and [d["label"] for d in record["detections"]] == ["face"]
    marker = "embedded server ready at "
    assert marker in done.stderr, done.stderr
    url = done.stderr.split(marker, 1)[1].split()[0]
    port = url.rsplit(":", 1)[1]
    assert _processes_with(f"--grpc-port={port}") == []
