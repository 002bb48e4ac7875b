"""Where a pipeline's time goes, against the real server: the stages' share from their own
statistics fits inside the pipeline's, and infer, bench and tune report it (`models`), only
for a pipeline.

How the stages are compared with the pipeline: the statistics of the pipeline and of each
stage are read before and after the same requests (nothing else uses the server meanwhile);
each figure is that interval's nanoseconds divided by the pipeline's requests, i.e. a mean
per request of the pipeline. A BLS model's compute includes the time it waits for its stages,
and each stage's queue + compute lies inside its own request, so the stages' queue + compute
add up to no more than the pipeline's own queue + compute."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.introspection.server_stats import split
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, parse, run_cli

pytestmark = pytest.mark.slow

STAGES = {"face_mesh": ["face_detector", "face_landmark"], "person_pose": ["pose_detector", "pose_landmark"]}
NOTE = "count every request those models served in the interval"


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of two photos with one face, one person (to the waist): the astronaut and her
    mirror image."""
    folder = tmp_path_factory.mktemp("pipeline_timing")
    photo = bgr(skimage.data.astronaut())
    cv2.imwrite(str(folder / "astronaut.png"), photo)
    cv2.imwrite(str(folder / "mirrored.png"), photo[:, ::-1])
    return folder


@pytest.mark.parametrize(("model", "requests"), [("face_mesh", 8), ("person_pose", 3)])
def test_the_stages_time_fits_inside_the_pipelines(triton: EmbeddedServer, model: str, requests: int) -> None:
    photo = bgr(skimage.data.astronaut())
    with TritonSession(triton.grpc_url, model) as session:
        before = session.read_server_counters()
        for _ in range(requests):
            result = session.infer(photo)
            assert result.ok and len(result.detections) == 1, result.error
        after = session.read_server_counters()
    server = split(before, after)
    assert server is not None and server.requests == requests
    detector, landmarks = server.stages
    assert [detector.model, landmarks.model] == STAGES[model]
    assert detector.count == requests, "the detector once per image"
    assert landmarks.count == requests, "one person or face: one crop, one landmark call per image"
    assert all(s.compute_ms > 0 and s.queue_ms >= 0 for s in server.stages)
    stages = sum(s.queue_ms + s.compute_ms for s in server.stages)
    assert stages <= server.queue_ms + server.compute_ms, (server.stages, server)


def test_infer_reports_the_stages_of_a_pipeline_and_none_for_a_single_model(
    triton: EmbeddedServer, photos: Path
) -> None:
    done = run_cli("infer", "--url", triton.grpc_url, "--model", "face_mesh", str(photos))
    assert done.returncode == 0, done.stderr
    _, summary = parse(done.stdout)
    timing = summary["timing"]
    models = timing["models"]
    assert list(models) == STAGES["face_mesh"]
    for figures in models.values():
        assert set(figures) == {"count", "queue_ms", "compute_ms"}
        assert figures["count"] == 2 and figures["compute_ms"] > 0
    # The rounded figures keep the order of the unrounded ones up to the rounding (3 decimals).
    stages = sum(m["queue_ms"] + m["compute_ms"] for m in models.values())
    own = timing["server_queue_ms"] + sum(
        timing[f"server_compute_{p}_ms"] for p in ("input", "infer", "output")
    )
    assert stages <= own + 0.005, timing
    assert NOTE in done.stderr and "face_detector, face_landmark" in done.stderr

    single = run_cli(
        "infer", "--url", triton.grpc_url, "--model", "face_detector", str(photos / "astronaut.png")
    )
    assert single.returncode == 0, single.stderr
    _, summary = parse(single.stdout)
    assert "server_queue_ms" in summary["timing"] and "models" not in summary["timing"]
    assert NOTE not in single.stderr


def test_bench_reports_the_stages_per_level(triton: EmbeddedServer, photos: Path, tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    done = run_cli(
        "bench", "--url", triton.grpc_url, "--model", "face_mesh", "--image", str(photos / "astronaut.png"),
        "--concurrency", "1,2", "--requests", "4", "--warmup", "1", "--output", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(report.read_text())
    for level in record["levels"]:
        assert list(level["models"]) == STAGES["face_mesh"]
        assert all(m["count"] == 4 for m in level["models"].values()), "the measured requests only"
    assert any(NOTE in note for note in record["notes"])
    assert done.stdout.count("stages per request: face_detector queue") == 2, done.stdout


def test_tune_reports_the_stages_per_level(triton: EmbeddedServer, photos: Path, tmp_path: Path) -> None:
    # The original config only (the settings asked are face_mesh's own): measured as found,
    # nothing reloaded.
    report = tmp_path / "tune.json"
    done = run_cli(
        "tune", "--url", triton.grpc_url, "--model", "face_mesh", "--image", str(photos / "astronaut.png"),
        "--instances", "2", "--max-batch", "4", "--queue-delay-us", "off", "--concurrency", "1",
        "--requests", "3", "--warmup", "1", "--output", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(report.read_text())
    (level,) = record["original"]["levels"]
    assert list(level["models"]) == STAGES["face_mesh"]
    assert all(m["count"] == 3 for m in level["models"].values())
    assert any(NOTE in note for note in record["notes"])
    assert "stages per request: face_detector queue" in done.stdout
