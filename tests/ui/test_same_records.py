"""The viewer and the command line run the same pipeline: for the same inputs they write the
same records, inputs that failed before becoming a request included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from tests.ui.viewer_fixtures import Harness, until, write_png

pytestmark = [pytest.mark.gui, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
VARYING = ("request_id", "latency_ms")  # differ from run to run by nature


def comparable(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["source"]: {k: v for k, v in r.items() if k not in VARYING} for r in records}


def test_cli_and_viewer_write_identical_records(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "inputs"
    folder.mkdir()
    write_png(folder / "astronaut.png", skimage.data.astronaut())
    write_png(folder / "coffee.png", skimage.data.coffee())
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff" + b"\x00" * 64)  # a JPEG head, no image
    (folder / "text.jpg").write_text("named like an image, is not one")
    (folder / "notes.txt").write_text("not media at all")
    # No missing path: the command line refuses one up front (exit 2), before any record.
    inputs = [str(folder)]

    cli = subprocess.run(
        [sys.executable, "-m", "app", "infer", "--url", triton.grpc_url, *inputs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in cli.stdout.splitlines() if line.strip()]
    cli_records = [r for r in lines if "summary" not in r]

    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=inputs)
    harness.run(until(lambda: viewer.runner.latest_counts() is not None and not viewer.runner.active()))
    exported = tmp_path / "viewer.jsonl"
    viewer.exporter.export_jsonl(True, str(exported))
    harness.run(until(lambda: "exported" in viewer.window.statusBar().currentMessage(), what="export"))
    viewer_records = [json.loads(line) for line in exported.read_text().splitlines()]

    assert len(cli_records) == len(viewer_records) == 5
    assert comparable(cli_records) == comparable(viewer_records)
    by_name = {Path(r["source"]).name: r for r in viewer_records}
    assert {n: r["status"] for n, r in by_name.items()} == {
        "astronaut.png": "ok",
        "coffee.png": "ok",
        "broken.jpg": "failed",
        "text.jpg": "failed",
        "notes.txt": "skipped",
    }
    assert len(by_name["astronaut.png"]["detections"]) == 1
    assert all(by_name[n]["request_id"] is None for n in ("text.jpg", "notes.txt"))
