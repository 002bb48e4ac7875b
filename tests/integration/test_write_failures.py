"""Exports and records when the disk refuses them (the command line, real processes): a file
that cannot be written whole leaves the old one as it was and nothing partial; streamed JSON
Lines end on a whole record and the message says how many; the run stops at the first
failure; a folder that cannot be written is refused before anything is sent.

Write failures are real: the command runs with its files limited in size (RLIMIT_FSIZE, the
same error path as a full disk: tests/write_failures.py), and the unwritable folder is a
read-only mount (root) or a folder without write permission.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data
import tritonclient.grpc as grpcclient

from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, run_cli
from tests.write_failures import run_app_limited, unwritable_folder

IMAGES = 60


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("photos")
    small = cv2.resize(bgr(skimage.data.astronaut()), (160, 160))
    for i in range(IMAGES):
        cv2.imwrite(str(folder / f"img_{i:03d}.png"), small)
    return folder


def inferences(server: EmbeddedServer) -> int:
    """The server's count of face_detector requests so far (how much a run really sent)."""
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        stats = client.get_inference_statistics("face_detector", as_json=True)
    return sum(
        int(m.get("inference_stats", {}).get("success", {}).get("count", 0)) for m in stats["model_stats"]
    )


def grpc_to(server: EmbeddedServer) -> list[str]:
    # gRPC payloads: shared-memory regions are files too, which the size limit would refuse.
    return ["--url", server.grpc_url, "--transport", "grpc"]


def leftovers(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(".part"))


def test_a_coco_file_that_cannot_be_written_leaves_the_old_one(
    triton: EmbeddedServer, photos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "prev.json"
    old = b'{"images": [], "annotations": [], "categories": []}\n'
    out.write_bytes(old)
    done = run_app_limited(
        2048, "infer", *grpc_to(triton), "--format", "coco", "--output", str(out), str(photos)
    )
    assert out.read_bytes() == old  # as it was, not truncated to broken JSON
    assert leftovers(tmp_path) == []
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"cannot write the coco export: [Errno 27] File too large: '{out}'" in done.stderr


def test_streamed_records_end_on_a_whole_record_and_the_count_is_said(
    triton: EmbeddedServer, photos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "o.jsonl"
    before = inferences(triton)
    done = run_app_limited(
        4096, "infer", *grpc_to(triton), "--concurrency", "2", "--output", str(out), str(photos)
    )
    sent = inferences(triton) - before
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    data = out.read_text()
    assert data.endswith("\n")
    lines = data.splitlines()
    records = [json.loads(line) for line in lines]  # every line whole
    assert records and all(r["status"] == "ok" for r in records)
    assert f"{out} holds the first {len(records)} record(s), each a whole line" in done.stderr
    assert "File too large" in done.stderr
    # Stopped at the first failure, not after all inference (2 in flight, a few read ahead).
    assert sent < IMAGES - 10, (sent, len(records))
    assert leftovers(tmp_path) == []


def test_per_image_files_are_whole_or_absent_and_the_run_stops(
    triton: EmbeddedServer, photos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "labelme"
    before = inferences(triton)
    done = run_app_limited(
        64,
        "infer",
        *grpc_to(triton),
        "--concurrency",
        "2",
        "--format",
        "labelme",
        "--output",
        str(out),
        str(photos),
    )
    sent = inferences(triton) - before
    files = [p for p in out.rglob("*") if p.is_file()]
    assert all(p.stat().st_size > 0 for p in files), [p.name for p in files if p.stat().st_size == 0]
    for path in files:
        json.loads(path.read_text())  # whole documents only
    assert leftovers(out) == []
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "cannot write the labelme export" in done.stderr and "the run stopped there" in done.stderr
    assert sent < IMAGES - 10, sent


@pytest.mark.parametrize(
    ("command", "option", "target"),
    [
        ("infer", ["--format", "coco", "--output"], "out.json"),
        ("infer", ["--format", "yolo", "--output"], "labels"),
        ("infer", ["--output"], "records.jsonl"),
        ("evaluate", ["--output"], "report.json"),
        ("evaluate", ["--records"], "records.jsonl"),
        ("evaluate", ["--plots"], "plots"),
        ("bench", ["--output"], "bench.json"),
        ("bench", ["--csv"], "bench.csv"),
        ("tune", ["--output"], "tune.json"),
        ("tune", ["--csv"], "tune.csv"),
        ("tune", ["--write-config"], "configs"),
    ],
)
def test_an_unwritable_folder_is_refused_before_anything_is_sent(
    command: str, option: list[str], target: str, tmp_path: Path
) -> None:
    # Nothing listens at --url: a message about the output proves it was checked before the
    # command tried to reach any server (let alone sent an image).
    url = "127.0.0.1:1"
    extra = {
        "infer": [str(tmp_path)],
        "evaluate": [str(tmp_path / "dataset"), "--model", "face_detector"],
        "bench": [],
        "tune": ["--model", "face_detector"],
    }[command]
    if command == "evaluate":  # a dataset that is there and labelled: only the output is wrong
        (tmp_path / "dataset").mkdir()
        cv2.imwrite(str(tmp_path / "dataset" / "a.png"), np.zeros((32, 32, 3), np.uint8))
        (tmp_path / "dataset" / "a.txt").write_text("0 0.5 0.5 0.25 0.25\n")
    with unwritable_folder(tmp_path) as folder:
        path = folder / target
        args = [command, "--url", url, *option, str(path), *extra]
        if command == "evaluate":
            args = [command, *extra, "--url", url, *option, str(path)]
        done = run_cli(*args, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{option[-1]} {path}: cannot write" in done.stderr, done.stderr[-2000:]
    assert "cannot reach" not in done.stderr and "Traceback" not in done.stderr
