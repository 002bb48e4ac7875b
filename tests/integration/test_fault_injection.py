"""Fault injection through `python -m app infer` as a user runs it: a folder of every kind of
bad entry, names that are not UTF-8, truncated videos, absurd options. Nothing is silently
skipped: one record per entry, whole JSON lines, the exit status says something failed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from tests.media import make_face_video

ROOT = Path(__file__).resolve().parents[2]
# As root, permission bits do not stop reads: drop the two capabilities that bypass them
# (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the process, so a mode-000 file really is
# unreadable to it. Not root: the permission bits apply anyway.
DROP_ROOT_FILE_ACCESS = (
    ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
)


def run_infer(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*DROP_ROOT_FILE_ACCESS, sys.executable, "-m", "app", "infer", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=timeout,  # a FIFO that was opened would block here forever
    )


def parse(raw: bytes) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every line strict UTF-8 and valid JSON; (records, summary)."""
    lines = [json.loads(line.decode("utf-8")) for line in raw.splitlines() if line.strip()]
    assert lines and "summary" in lines[-1], raw[-2000:]
    return lines[:-1], lines[-1]["summary"]


def write_jpeg(path: Path | bytes) -> None:
    ok, data = cv2.imencode(".jpg", cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2BGR))
    assert ok
    with open(path, "wb") as f:
        f.write(data.tobytes())


@pytest.fixture
def bad_folder(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A folder with one entry of each kind; {entry: the status its record must have}."""
    folder = tmp_path / "bad"
    (folder / "sub").mkdir(parents=True)
    (folder / "locked").mkdir()
    expected = {
        "good.jpg": "ok",
        "sub/inner.jpg": "ok",  # folders are recursed: their entries count, not the folder
        "empty.jpg": "failed",
        "text.jpg": "failed",
        "random.png": "failed",
        "corrupt.png": "failed",
        "notes.txt": "skipped",
        "dangling.jpg": "failed",
        "loop_a.jpg": "skipped",
        "loop_b.jpg": "skipped",
        "dirlink": "skipped",
        "pipe.jpg": "failed",
        "secret.jpg": "failed",
        "locked": "failed",  # a folder that cannot be listed: one failed record
    }
    write_jpeg(folder / "good.jpg")
    write_jpeg(folder / "sub" / "inner.jpg")
    write_jpeg(folder / "locked" / "hidden.jpg")
    (folder / "empty.jpg").write_bytes(b"")
    (folder / "text.jpg").write_text("this is not a picture\n")
    (folder / "random.png").write_bytes(b"\x00" + random.Random(11).randbytes(4096))
    (folder / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 50)
    (folder / "notes.txt").write_text("readme\n")
    (folder / "dangling.jpg").symlink_to(folder / "missing.jpg")
    (folder / "loop_a.jpg").symlink_to(folder / "loop_b.jpg")
    (folder / "loop_b.jpg").symlink_to(folder / "loop_a.jpg")
    (folder / "dirlink").symlink_to(folder / "sub", target_is_directory=True)
    os.mkfifo(folder / "pipe.jpg")
    write_jpeg(folder / "secret.jpg")
    (folder / "secret.jpg").chmod(0)
    (folder / "locked").chmod(0)
    try:
        yield folder, expected
    finally:
        (folder / "locked").chmod(0o755)  # so that pytest can remove it


def test_a_folder_of_bad_entries_gives_one_record_per_entry_and_exit_1(
    triton: EmbeddedServer, bad_folder: tuple[Path, dict[str, str]]
) -> None:
    folder, expected = bad_folder
    # The fixture really made one entry of each kind (walking the tree as the app does).
    entries = {str(p.relative_to(folder)) for p in folder.iterdir() if p.name != "sub"}
    assert entries | {"sub/inner.jpg"} == set(expected)
    done = run_infer("--url", triton.grpc_url, str(folder))
    records, summary = parse(done.stdout)
    assert done.returncode == 1, done.stderr.decode()
    by_entry = {str(Path(r["source"]).relative_to(folder)): r for r in records}
    assert len(records) == len(expected) == len(by_entry)  # one record per entry, no duplicate
    assert {k: r["status"] for k, r in by_entry.items()} == expected
    for name, record in by_entry.items():
        if record["status"] != "ok":
            assert record["error"] and name.split("/")[-1] in record["error"], record
    assert "Permission denied" in by_entry["secret.jpg"]["error"]
    assert "cannot list the folder" in by_entry["locked"]["error"]
    assert "not a regular file" in by_entry["pipe.jpg"]["error"]
    assert "dangling" in by_entry["dangling.jpg"]["error"]
    assert "link loop" in by_entry["loop_a.jpg"]["error"]
    assert summary["total"] == len(expected)
    assert (summary["ok"], summary["skipped"]) == (2, 4)
    assert summary["failed"] == len(expected) - 6


def test_names_that_are_not_utf8_are_all_written_as_valid_json(
    triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    raw_names = [b"caf\xe9.jpg", b"\xff\xfe.jpg", "ok-\u00e9t\u00e9.jpg".encode(), b"plain.jpg"]
    for name in raw_names:
        write_jpeg(os.path.join(os.fsencode(folder), name))
    out = tmp_path / "records.jsonl"
    done = run_infer("--url", triton.grpc_url, "--output", str(out), str(folder))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    records, summary = parse(out.read_bytes())
    assert summary["total"] == summary["ok"] == len(raw_names) == len(records)
    # Each record names its file: the escaped name maps back to the very bytes on disk.
    on_disk = {os.path.join(os.fsencode(folder), n) for n in raw_names}
    assert {os.fsencode(r["source"]) for r in records} == on_disk
    assert all(len(r["detections"]) == 1 for r in records)  # the astronaut's face, each time


def test_truncated_videos_report_what_is_missing(triton: EmbeddedServer, tmp_path: Path) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    for suffix in ("avi", "mp4"):
        whole = tmp_path / f"whole.{suffix}"
        make_face_video(whole, frames=60, fps=30, size=(320, 240))
        data = whole.read_bytes()
        (folder / f"cut.{suffix}").write_bytes(data[: len(data) // 2])
    done = run_infer("--url", triton.grpc_url, str(folder))
    records, summary = parse(done.stdout)
    assert done.returncode == 1
    avi = [r for r in records if r["source"].endswith("cut.avi")]
    mp4 = [r for r in records if r["source"].endswith("cut.mp4")]
    frames = [r for r in avi if r["frame"] is not None]
    (avi_failure,) = [r for r in avi if r["status"] == "failed"]
    assert frames and all(r["status"] == "ok" for r in frames)
    assert f"ended after {len(frames)} of its 60 frames" in avi_failure["error"]
    (mp4_failure,) = mp4  # the index (moov) was in the cut half: the file cannot be opened
    assert mp4_failure["status"] == "failed" and "cut.mp4" in mp4_failure["error"]
    assert summary["total"] == len(records) == len(frames) + 2
    assert summary["failed"] == 2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--concurrency", "100000", "out of range: from 1 to 256"),
        ("--concurrency", "0", "out of range"),
        ("--timeout", "nan", "must be a positive number of seconds"),
        ("--timeout", "inf", "must be a positive number of seconds"),
        ("--timeout", "-1", "must be a positive number of seconds"),
    ],
)
def test_absurd_options_are_refused_with_exit_2(
    option: str, value: str, message: str, tmp_path: Path
) -> None:
    done = run_infer("--url", "127.0.0.1:1", option, value, str(tmp_path))
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert message in stderr and option in stderr
    assert "Traceback" not in stderr
