"""The bundled two-stage models (face_mesh, person_pose) as the product uses any keypoint model:
the stages listed by `models`, a missing stage named in the error, live streams with the
in-flight window, tracking and recording, and the export formats. Real server, real models."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import cv2
import pytest
import skimage.data

from app.inference.core.session import TritonSession
from app.inference.core.spec import Limits, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import InferenceResult
from app.pipeline.live import LiveJob, frame_of
from app.pipeline.recording import LiveRecording, jsonl_path_for
from app.pipeline.tracking import StreamTrackers
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from app.sources.live import LiveCapture
from tests.integration.test_cli_infer import bgr, parse, run_cli
from tests.media import make_face_video, make_person_video

pytestmark = pytest.mark.slow

KEYPOINTS = {"face_mesh": 468, "person_pose": 33}


# -- the stages ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "stages"),
    [("face_mesh", ["face_detector", "face_landmark"]), ("person_pose", ["pose_detector", "pose_landmark"])],
)
def test_models_prints_the_stages(triton: EmbeddedServer, model: str, stages: list[str]) -> None:
    done = run_cli("models", "--url", triton.grpc_url, "--model", model)
    assert done.returncode == 0, done.stderr
    assert "  pipeline (BLS, its composing_models): 2 stages" in done.stdout
    assert f"    1. {stages[0]}: READY" in done.stdout and f"    2. {stages[1]}: READY" in done.stdout
    assert f"task: pose, {KEYPOINTS[model]} keypoints per detection" in done.stdout


def test_a_single_model_shows_no_stages(triton: EmbeddedServer) -> None:
    done = run_cli("models", "--url", triton.grpc_url, "--model", "face_landmark")
    assert done.returncode == 0, done.stderr
    assert "pipeline" not in done.stdout


@pytest.fixture(scope="module")
def stage_missing(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server whose repository has face_mesh and its detector but not face_landmark."""
    repo = tmp_path_factory.mktemp("stage_missing")
    for name in ("face_mesh", "face_detector"):
        (repo / name).symlink_to(model_repository() / name, target_is_directory=True)
    with EmbeddedServer(repo, startup_timeout=180) as server:
        yield server


def test_a_pipeline_whose_stage_is_missing_fails_naming_the_stage(stage_missing: EmbeddedServer) -> None:
    photo = bgr(skimage.data.astronaut())
    folder = Path(stage_missing.model_repository).parent / "photo"
    folder.mkdir(exist_ok=True)
    cv2.imwrite(str(folder / "astronaut.png"), photo)
    done = run_cli("infer", "--url", stage_missing.grpc_url, "--model", "face_mesh", str(folder))
    assert done.returncode == 1, done.stderr
    records, summary = parse(done.stdout)
    assert summary["failed"] == 1
    assert "stage model 'face_landmark' failed" in records[0]["error"], records[0]["error"]
    listing = run_cli("models", "--url", stage_missing.grpc_url, "--model", "face_mesh")
    assert "    2. face_landmark: not on this server" in listing.stdout


# -- live, tracking, recording ------------------------------------------------------------------
def _live(url: str, model: str, video: Path, recording: Path) -> tuple[list[InferenceResult], LiveJob]:
    """Every frame of the video through a LiveJob (window 2), tracked, recorded."""
    results: list[InferenceResult] = []
    lock = threading.Lock()
    trackers = StreamTrackers()
    recorder = LiveRecording()
    recorder.start(recording, fps=10.0)

    def shown(result: InferenceResult) -> None:
        tracked = trackers.track(result)
        frame = frame_of(result)
        with lock:
            results.append(tracked)
            recorder.write(frame, tracked.detections)

    with TritonSession(
        SessionSpec(endpoints=parse_endpoints(url), model=model, limits=Limits(max_in_flight=8))
    ) as session:
        job = LiveJob(session, shown, max_in_flight=2, drop_when_busy=False)
        ended = threading.Event()
        capture = LiveCapture(video, on_frame=job.offer, on_end=ended.set, realtime=False)
        capture.start()
        assert ended.wait(300)
        capture.stop()
        job.finish()
        assert job.group.wait_drained(60)
    summary = recorder.stop()
    assert summary is not None and summary.ok, summary
    return results, job


@pytest.mark.parametrize("model", ["face_mesh", "person_pose"])
def test_live_stream_tracked_and_recorded(triton: EmbeddedServer, tmp_path: Path, model: str) -> None:
    video = tmp_path / "source.avi"
    if model == "face_mesh":
        make_face_video(video, frames=40, fps=20, size=(480, 360))  # ~11 px a frame: trackable
    else:
        make_person_video(video, frames=12)
    frames = int(cv2.VideoCapture(str(video)).get(cv2.CAP_PROP_FRAME_COUNT))
    results, job = _live(triton.grpc_url, model, video, tmp_path / "recording.mp4")
    stats = job.stats()
    assert stats.submitted == stats.offered == frames == len(results) and stats.dropped == 0
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    found = [r for r in results if r.detections]
    assert len(found) >= frames - 1  # the subject is in every frame
    for r in found:
        assert all(len(d.keypoints or ()) == KEYPOINTS[model] for d in r.detections)
    # One subject moving: tracked, one track id for most of its frames.
    ids = [r.detections[0].track_id for r in sorted(found, key=lambda r: r.frame or 0)]
    tracked = [i for i in ids if i is not None]
    assert tracked and max(tracked.count(i) for i in set(tracked)) >= 0.6 * len(ids), str(ids)
    recorded = [
        json.loads(line) for line in jsonl_path_for(tmp_path / "recording.mp4").read_text().splitlines()
    ]
    with_points = [r for r in recorded if r.get("detections")]
    assert with_points and len(with_points[0]["detections"][0]["keypoints"]) == KEYPOINTS[model]
    assert cv2.VideoCapture(str(tmp_path / "recording.mp4")).get(cv2.CAP_PROP_FRAME_COUNT) == len(recorded)


# -- exports --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def photo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("astronaut")
    cv2.imwrite(str(folder / "astronaut.png"), bgr(skimage.data.astronaut()))
    return folder


@pytest.mark.parametrize("model", ["face_mesh", "person_pose"])
def test_exports_carry_every_keypoint(
    triton: EmbeddedServer, photo_folder: Path, tmp_path: Path, model: str
) -> None:
    k = KEYPOINTS[model]
    done = run_cli("infer", "--url", triton.grpc_url, "--model", model, str(photo_folder))
    assert done.returncode == 0, done.stderr
    (record,), _ = parse(done.stdout)
    (detection,) = record["detections"]
    visible = sum(1 for _, _, s in detection["keypoints"] if s >= 0.5)
    assert len(detection["keypoints"]) == k and visible >= (k if model == "face_mesh" else 12)

    coco_file = tmp_path / "coco.json"
    assert run_cli("infer", "--url", triton.grpc_url, "--model", model, "--format", "coco",
                   "--output", str(coco_file), str(photo_folder)).returncode == 0  # fmt: skip
    coco = json.loads(coco_file.read_text())
    (annotation,) = coco["annotations"]
    assert len(annotation["keypoints"]) == 3 * k and annotation["num_keypoints"] == visible

    yolo = tmp_path / "yolo"
    assert run_cli("infer", "--url", triton.grpc_url, "--model", model, "--format", "yolo",
                   "--output", str(yolo), str(photo_folder)).returncode == 0  # fmt: skip
    (line,) = (yolo / "astronaut.txt").read_text().splitlines()
    assert len(line.split()) == 5 + 3 * k

    labelme = tmp_path / "labelme"
    assert run_cli("infer", "--url", triton.grpc_url, "--model", model, "--format", "labelme",
                   "--output", str(labelme), str(photo_folder)).returncode == 0  # fmt: skip
    shapes = json.loads((labelme / "astronaut.json").read_text())["shapes"]
    assert sum(1 for s in shapes if s["shape_type"] == "point") == visible


def test_loading_the_pipelines_leaves_no_folder_beside_the_models(triton: EmbeddedServer) -> None:
    """Their shared modules are imported without bytecode: a __pycache__ folder in the
    repository would be taken for a model (stuck loading) at the next start."""
    assert triton.models and not (model_repository() / "__pycache__").exists()
