"""File names that are not valid UTF-8 through the whole viewer: opened, shown in the strip,
exported as JSON Lines byte for byte the way `python -m app infer` writes them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import cv2
import pytest
from skimage import data

from app.inference.result import record_line
from app.server.embedded import EmbeddedServer
from tests.ui.viewer_fixtures import Harness, until

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_names_that_are_not_utf8_are_exported_like_the_command_line(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    raw_names = [b"caf\xe9.png", b"\xff\xfe.png", b"plain.png"]
    ok, png = cv2.imencode(".png", cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR))
    assert ok
    for name in raw_names:
        with open(os.path.join(os.fsencode(folder), name), "wb") as f:  # bytes: any name
            f.write(png.tobytes())
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.open_paths([str(folder)])
    gallery = viewer.gallery
    harness.run(until(lambda: len(gallery.results) == 3 and not viewer.runner.active(), what="results"))
    assert all(r.ok for r in gallery.results.values())
    assert len(viewer.window.strip.keys()) == 3  # every one has its thumbnail

    out = tmp_path / "export.jsonl"
    viewer.exporter.export_jsonl(True, str(out))
    harness.run(until(out.exists, what="the export"))
    raw = out.read_bytes()
    lines = raw.decode("utf-8").splitlines(keepends=True)  # strict UTF-8: no stray bytes
    expected = [record_line(r.to_record()) for r in viewer.exporter.current_results(True)]
    assert lines == expected
    records = [json.loads(line) for line in lines]
    on_disk = {os.path.join(os.fsencode(folder), n) for n in raw_names}
    assert {os.fsencode(r["source"]) for r in records} == on_disk
