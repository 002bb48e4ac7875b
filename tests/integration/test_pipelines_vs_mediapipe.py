"""The bundled pipelines give MediaPipe's answers: face_mesh against MediaPipe 0.10.14's
solutions.face_mesh, person_pose against its solutions.pose, both in static-image mode, run in
MediaPipe's own venv (tests/reference/, `make reference`) once for the module, on photos of
faces and people and on rotated, scaled and mirrored versions of them. The product's side is
the real command line (`infer --model ...`) against the session's server.

Tolerances, as a fraction of the size of the face / body (the longer side of the box around
MediaPipe's landmarks; for a body, its visible ones), MediaPipe's points clipped to the image
as the product reports them:
- face_mesh, all 468 landmarks of every face, and the same faces found: mean error at most
  0.1%, the worst landmark at most 0.5% (reached: below 0.01%; what is left is OpenCV's DNN
  module running BlazeFace where MediaPipe runs TensorFlow Lite).
- person_pose, the landmarks MediaPipe sees (visibility >= 0.5): mean error at most 1%, the
  worst at most 3%; visibilities within 0.02 (reached: mean up to ~0.3%, worst ~2%, on
  elbows and ankles whose heatmap confidence is near the refinement's 0.5 threshold).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from app.resources import model_repository, sample_image
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.reference.mediapipe_runner import run_mediapipe

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

FACE_MEAN, FACE_WORST = 0.001, 0.005
POSE_MEAN, POSE_WORST, POSE_VISIBILITY = 0.01, 0.03, 0.02
VISIBLE = 0.5


def _rotated(image: np.ndarray, degrees: float) -> np.ndarray:
    """Rotated about its centre on a canvas big enough for all of it (grey border)."""
    h, w = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    cos, sin = abs(matrix[0, 0]), abs(matrix[0, 1])
    nw, nh = int(h * sin + w * cos), int(h * cos + w * sin)
    matrix[0, 2] += nw / 2 - w / 2
    matrix[1, 2] += nh / 2 - h / 2
    return cv2.warpAffine(image, matrix, (nw, nh), flags=cv2.INTER_LINEAR, borderValue=(128, 128, 128))


def _scaled(image: np.ndarray, factor: float) -> np.ndarray:
    size = (round(image.shape[1] * factor), round(image.shape[0] * factor))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA if factor < 1 else cv2.INTER_LINEAR)


VARIANTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "original": lambda im: im,
    "rotated+20": lambda im: _rotated(im, 20),
    "rotated-25": lambda im: _rotated(im, -25),
    "scaled0.6": lambda im: _scaled(im, 0.6),
    "scaled1.5": lambda im: _scaled(im, 1.5),
    "mirrored": lambda im: np.ascontiguousarray(im[:, ::-1]),
}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every photo in every variant, as lossless PNG files both sides read: the bundled sample
    (astronaut) and the reference venv's photos (a portrait; people standing in a street; two men)."""
    folder = tmp_path_factory.mktemp("people")
    photos = {"astronaut.jpg": str(sample_image()), **run_mediapipe([])["photos"]}
    assert {"bus.jpg", "zidane.jpg", "grace_hopper.jpg"} <= set(photos), photos
    out = {}
    for name, path in photos.items():
        image = cv2.imread(path, cv2.IMREAD_COLOR)
        assert image is not None, path
        for variant, transform in VARIANTS.items():
            target = folder / f"{Path(name).stem}-{variant}.png"
            cv2.imwrite(str(target), transform(image))
            out[target.name] = target
    return out


@pytest.fixture(scope="module")
def mediapipe(images: dict[str, Path]) -> dict[str, Any]:
    """MediaPipe's answers, by file name, plus the model files its solutions ran."""
    names = sorted(images)
    answer = run_mediapipe([images[n] for n in names])
    assert answer["mediapipe"] == "0.10.14"
    assert all("error" not in r for r in answer["results"]), answer["results"]
    return {"model_files": answer["model_files"], "results": dict(zip(names, answer["results"], strict=True))}


def _product(triton: EmbeddedServer, model: str, images: dict[str, Path]) -> dict[str, dict[str, Any]]:
    folder = next(iter(images.values())).parent
    done = run_cli("infer", "--url", triton.grpc_url, "--model", model, str(folder), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert summary["ok"] == len(images)
    return {Path(r["source"]).name: r for r in records}


def _errors(
    ours: np.ndarray, theirs: np.ndarray, keep: np.ndarray, image: dict[str, Any]
) -> tuple[float, float]:
    """Mean and worst distance of the kept landmarks, as fractions of the size of their box;
    MediaPipe's points clipped to the image, as the product reports keypoints."""
    size = float(np.ptp(theirs[keep, :2], axis=0).max())
    clipped = np.clip(theirs[keep, :2], 0, [image["width"], image["height"]])
    distance = np.linalg.norm(ours[keep, :2] - clipped, axis=1) / size
    return float(distance.mean()), float(distance.max())


def _nearest(candidates: list[np.ndarray], target: np.ndarray) -> np.ndarray:
    centre = target[:, :2].mean(axis=0)
    return min(candidates, key=lambda c: float(np.linalg.norm(c[:, :2].mean(axis=0) - centre)))


def test_mediapipe_runs_the_same_networks(mediapipe: dict[str, Any]) -> None:
    """The comparison means something only if both sides run the same networks."""
    from tflite_runtime.interpreter import Interpreter

    bundled = {
        "face_landmark.tflite": model_repository() / "face_landmark/1/face_landmark.tflite",
        "pose_detection.tflite": model_repository() / "pose_detector/1/pose_detection.tflite",
        "pose_landmark_full.tflite": model_repository() / "pose_landmark/1/pose_landmark_full.tflite",
    }
    for name, path in bundled.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == mediapipe["model_files"][name]["sha256"], name
    # BlazeFace: the bundled copy came from another package, its bytes (metadata) differ from
    # MediaPipe's: the same network gives the same numbers.
    theirs = Path(mediapipe["model_files"]["face_detection_short_range.tflite"]["path"])
    ours = model_repository() / "face_detector/1/face_detection_short_range.tflite"
    probe = np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    outputs = []
    for path in (ours, theirs):
        interpreter = Interpreter(model_path=str(path), num_threads=1)
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], probe)
        interpreter.invoke()
        outputs.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
    for a, b in zip(*outputs, strict=True):
        assert np.array_equal(a, b)


def test_face_mesh_matches_mediapipe(
    triton: EmbeddedServer, images: dict[str, Path], mediapipe: dict[str, Any]
) -> None:
    records = _product(triton, "face_mesh", images)
    figures, compared = [], 0
    for name, reference in sorted(mediapipe["results"].items()):
        theirs = [np.array(f) for f in reference["faces"]]
        ours = [np.array(d["keypoints"]) for d in records[name]["detections"]]
        assert len(ours) == len(theirs), (name, len(ours), len(theirs))
        for face in theirs:
            mine = _nearest(ours, face)
            assert mine.shape == (468, 3)
            mean, worst = _errors(mine, face, np.ones(468, bool), reference)
            figures.append((name, mean, worst))
            assert mean <= FACE_MEAN and worst <= FACE_WORST, (name, mean, worst)
            compared += 1
    _report("face_mesh", figures)
    assert compared >= 12  # faces in most photos and variants (BlazeFace is short-range)


def test_person_pose_matches_mediapipe(
    triton: EmbeddedServer, images: dict[str, Path], mediapipe: dict[str, Any]
) -> None:
    records = _product(triton, "person_pose", images)
    figures, compared = [], 0
    for name, reference in sorted(mediapipe["results"].items()):
        ours = [np.array(d["keypoints"]) for d in records[name]["detections"]]
        for body in (np.array(p) for p in reference["poses"]):
            assert ours, f"{name}: MediaPipe found a person, person_pose none"
            mine = _nearest(ours, body)
            assert mine.shape == (33, 3)
            visible = body[:, 2] >= VISIBLE
            mean, worst = _errors(mine, body, visible, reference)
            figures.append((name, mean, worst))
            assert mean <= POSE_MEAN and worst <= POSE_WORST, (name, mean, worst)
            assert np.abs(mine[:, 2] - body[:, 2]).max() <= POSE_VISIBILITY, name
            compared += 1
    _report("person_pose", figures)
    assert compared >= 18


def _report(model: str, figures: list[tuple[str, float, float]]) -> None:
    """The figures reached, shown with -s (the README quotes them)."""
    means, worst = [f[1] for f in figures], [f[2] for f in figures]
    print(
        f"\n{model} vs MediaPipe: {len(figures)} compared; mean error {np.mean(means):.3%} of the size "
        f"(largest mean {max(means):.3%}), worst landmark {max(worst):.3%}"
    )
    print(json.dumps([(n, round(m, 4), round(w, 4)) for n, m, w in figures]))
