"""Media that are more than one picture: a video whose frame size changes mid-stream (the frames
OpenCV cannot decode fail, named, never reported ok at the old size), a multi-page TIFF and an
animated GIF (every page or frame a record with `frame` set; in the viewer, one clear record).
Also a JPEG whose header announces more than its data holds: failed, never ok."""

from __future__ import annotations

import struct
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult, Status
from app.pipeline.batch import BatchJob, VideoPolicy
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.media import make_size_changing_video


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("media_kinds")
    pages = [Image.new("RGB", (160 + 40 * i, 120), (40 * i, 90, 200)) for i in range(3)]
    pages[0].save(folder / "pages.tif", save_all=True, append_images=pages[1:])
    frames = [Image.new("RGB", (80, 60), (60 * i, 0, 0)) for i in range(4)]
    frames[0].save(folder / "anim.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)
    make_size_changing_video(folder / "changes.ts", ((320, 240), (640, 360)))
    ok, jpeg = cv2.imencode(".jpg", np.random.default_rng(0).integers(0, 255, (240, 320, 3), np.uint8))
    assert ok
    data = jpeg.tobytes()
    sof = data.index(b"\xff\xc0")
    (folder / "announces.jpg").write_bytes(
        data[: sof + 5] + struct.pack(">HH", 30000, 30000) + data[sof + 9 :]
    )
    return {p.stem: p for p in folder.iterdir()}


def test_infer_reads_every_page_and_frame_and_fails_what_it_cannot_decode(
    triton: EmbeddedServer, media: dict[str, Path]
) -> None:
    paths = [str(media[name]) for name in ("pages", "anim", "changes", "announces")]
    run = run_cli("infer", "--url", triton.grpc_url, *paths, timeout=180)
    records, summary = parse(run.stdout)
    by_source: dict[str, list[dict]] = {}
    for record in records:
        by_source.setdefault(Path(record["source"]).stem, []).append(record)
    for kept in by_source.values():
        kept.sort(key=lambda r: r["frame"] or 0)  # records come as they are answered
    pages = by_source["pages"]
    assert [(r["frame"], r["status"], r["width"]) for r in pages] == [
        (0, "ok", 160),
        (1, "ok", 200),
        (2, "ok", 240),
    ]
    assert [(r["frame"], r["status"], r["width"]) for r in by_source["anim"]] == [
        (i, "ok", 80) for i in range(4)
    ]
    video = {r["frame"]: r for r in by_source["changes"]}
    assert all(video[i]["status"] == "ok" and video[i]["width"] == 320 for i in range(10))
    later = [r for frame, r in video.items() if frame is not None and frame >= 10]
    assert len(later) >= 8  # (the decoder may keep the stream's last frame to itself)
    for record in later:  # never "ok" at the old size
        assert record["status"] == "failed", record
        assert "frame size changed from 320 x 240 to 640 x 360 at frame 10" in record["error"]
    (announces,) = by_source["announces"]
    assert announces["status"] == "failed" and "cannot hold the 30000 x 30000 image" in announces["error"]
    assert summary["total"] == len(records) and run.returncode == 1


def test_the_viewer_says_what_it_does_not_read(triton: EmbeddedServer, media: dict[str, Path]) -> None:
    results: list[InferenceResult] = []
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url))) as session:
        job = BatchJob(session, [media["pages"], media["anim"]], results.append, videos=VideoPolicy.REFUSE)
        counts = job.run()
    assert counts.total == 2 and counts.failed == 2
    errors = {Path(r.source or "").stem: r.error or "" for r in results}
    assert all(r.status is Status.FAILED and r.frame is None for r in results)
    assert "a multi-page TIFF (3 pages), not read here" in errors["pages"]
    assert "a GIF (read as frames, like a video)" in errors["anim"]
