"""Where a pipeline's time goes, against the real server: the stages' share from their own
statistics fits inside the pipeline's, and infer, bench and tune report it (`models`), only
for a pipeline.

How the stages are compared with the pipeline: the statistics of the pipeline and of each
stage are read before and after the same requests (nothing else uses the server meanwhile);
each figure is that interval's nanoseconds divided by the pipeline's requests, i.e. a mean
per request of the pipeline. A BLS model's compute includes the time it waits for its stages,
and each stage's queue + compute lies inside its own request, so the stages' queue + compute
add up to no more than the pipeline's own queue + compute. Triton counts an ensemble
otherwise: its compute is its steps' compute, its queue only its own, so its steps' queue +
compute add up to no more than its total (success) time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import SessionSpec
from app.inference.introspection.server_stats import read_settled, split
from app.inference.protocol import parse_endpoints
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, parse, run_cli

pytestmark = pytest.mark.slow

STAGES = {"face_mesh": ["face_detector", "face_landmark"], "person_pose": ["pose_detector", "pose_landmark"]}
NOTE = "count every request those models served in the interval"
# An ensemble of one step: face_detector's boxes as they are.
ENSEMBLE = """
name: "faces_ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "image", data_type: TYPE_UINT8, dims: [ -1, -1, 3 ] } ]
output [
  { name: "num_dets", data_type: TYPE_INT32, dims: [ 1 ] },
  { name: "det_boxes", data_type: TYPE_FP32, dims: [ 100, 4 ] },
  { name: "det_scores", data_type: TYPE_FP32, dims: [ 100 ] },
  { name: "det_classes", data_type: TYPE_INT32, dims: [ 100 ] }
]
ensemble_scheduling { step [ {
  model_name: "face_detector"
  model_version: -1
  input_map { key: "image" value: "image" }
  output_map { key: "num_dets" value: "num_dets" }
  output_map { key: "det_boxes" value: "det_boxes" }
  output_map { key: "det_scores" value: "det_scores" }
  output_map { key: "det_classes" value: "det_classes" }
} ] }
"""


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
    with TritonSession(SessionSpec(endpoints=parse_endpoints(triton.grpc_url), model=model)) as session:
        before = session.read_server_counters()
        for _ in range(requests):
            result = session.infer(photo)
            assert result.ok and len(result.detections) == 1, result.error
        after = read_settled(session.read_server_counters, before, requests)
    assert after is not None
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


@pytest.fixture(scope="module")
def ensemble_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A server with face_detector and faces_ensemble (its one step)."""
    repo = tmp_path_factory.mktemp("ensemble")
    (repo / "face_detector").symlink_to(model_repository() / "face_detector", target_is_directory=True)
    (repo / "faces_ensemble" / "1").mkdir(parents=True)
    (repo / "faces_ensemble" / "config.pbtxt").write_text(ENSEMBLE)
    with EmbeddedServer(repo, startup_timeout=180) as server:
        yield server


def test_an_ensembles_steps_are_its_stages(ensemble_server: EmbeddedServer, photos: Path) -> None:
    photo = bgr(skimage.data.astronaut())
    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(ensemble_server.grpc_url), model="faces_ensemble")
    ) as session:
        before = session.read_server_counters()
        for _ in range(6):
            result = session.infer(photo)
            assert result.ok and len(result.detections) == 1, result.error
        after = read_settled(session.read_server_counters, before, 6)
    assert after is not None
    server = split(before, after)
    assert server is not None and server.requests == 6
    (step,) = server.stages
    assert (step.model, step.count) == ("face_detector", 6) and step.compute_ms > 0
    assert step.queue_ms + step.compute_ms <= server.total_ms, server

    listing = run_cli("models", "--url", ensemble_server.grpc_url, "--model", "faces_ensemble")
    assert "  pipeline (ensemble): 1 stage\n    1. face_detector: READY" in listing.stdout, listing.stdout

    done = run_cli("infer", "--url", ensemble_server.grpc_url, "--model", "faces_ensemble", str(photos))
    assert done.returncode == 0, done.stderr
    _, summary = parse(done.stdout)
    assert summary["timing"]["models"]["face_detector"]["count"] == 2
