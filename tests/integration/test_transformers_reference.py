"""The DETR family as Hugging Face transformers exports it (`pred_boxes`: normalised cx, cy, w,
h; `logits`), served from its model file (the folder `repository save` writes, one server for
the file's tests; test_model_files.py shows `--model FILE` with no server gives the same
records), gives transformers' own `post_process_object_detection` on what the file gives:
- DETR: softmax over the classes and the last "no object", one detection per query; its
  image processor normalises with ImageNet's mean and std, which a profile tells the app (the
  file cannot), with the class count that says the logits' last column is "no object";
- RT-DETR: sigmoid per class, the top 300 over queries x classes; input 0..1, no profile.
Both small, with random weights, built, exported and post-processed by transformers in the
reference venv (tests/ultralytics/transformers_reference.py, cached per machine).

transformers resizes with Pillow, the app with OpenCV: on a photo of the model's own size
(320x320, no resize) the app sends the processor's very pixels; on a non-square 240x160 one
the resizes differ by a fraction of a grey level. That is enough for RT-DETR with random
weights to pick another of two near-equal encoder queries once in a few hundred, so there
it is held to all but 1% of the detections; DETR (no query selection) to every one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest
import skimage.data

from app.inference.model_files.config import Backend
from app.inference.model_files.save import save_model_folder
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.integration.test_cli_infer import bgr, parse
from tests.pairing import matched_closest_first
from tests.ultralytics import venv as reference

pytestmark = [pytest.mark.slow]
BOX_PX, SCORE = 1.0, 0.01
DETR_PROFILE = """labels = ["a", "b", "c"]   # 3 classes: the logits' 4th column is "no object"
[input]
preprocess = "resize"
mean = [0.485, 0.456, 0.406]    # DetrImageProcessor's ImageNet normalisation
std = [0.229, 0.224, 0.225]
[output]
score_activation = "softmax"
"""


def photos(folder: Path) -> list[Path]:
    square = folder / "astronaut.png"  # the model's own size: no resize on either side
    cv2.imwrite(
        str(square), cv2.resize(bgr(skimage.data.astronaut()), (320, 320), interpolation=cv2.INTER_AREA)
    )
    wide = folder / "coffee.png"  # upscaled to 320x320 (stretched), boxes mapped back
    cv2.imwrite(str(wide), cv2.resize(bgr(skimage.data.coffee()), (240, 160), interpolation=cv2.INTER_AREA))
    return [square, wide]


def theirs_in_the_image(
    predicted: dict[str, list], width: int, height: int
) -> list[tuple[list[float], int, float]]:
    """transformers' boxes clipped to the image, empty ones dropped: what the app draws."""
    out = []
    for box, label, score in zip(predicted["boxes"], predicted["labels"], predicted["scores"], strict=True):
        x1, x2 = (min(max(v, 0.0), width) for v in (box[0], box[2]))
        y1, y2 = (min(max(v, 0.0), height) for v in (box[1], box[3]))
        if x2 > x1 and y2 > y1:
            out.append(([x1, y1, x2, y2], label, score))
    return out


def agreeing(ours: list[dict], theirs: list[tuple[list[float], int, float]]) -> int:
    """How many of theirs have one of ours (each used once) of the same class within BOX_PX
    and SCORE; the closest pairs first (random weights give many near-equal detections)."""
    pairs = []
    for i, (box, label, score) in enumerate(theirs):
        for j, d in enumerate(ours):
            off = max(abs(a - b) for a, b in zip(d["box"], box, strict=True))
            if d["class_id"] == label and off <= BOX_PX and abs(d["score"] - score) <= SCORE:
                pairs.append((off + abs(d["score"] - score), i, j))
    return matched_closest_first(pairs)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """The photos, and the folder of the exports and transformers' predictions."""
    images = photos(tmp_path_factory.mktemp("transformers_photos"))
    return images, reference.transformers_reference(images)


@pytest.fixture(scope="module")
def server(
    exported: tuple[list[Path], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedServer]:
    repository = tmp_path_factory.mktemp("transformers_repository")
    for name in ("detr", "rtdetr"):
        save_model_folder(exported[1] / name / "model.onnx", repository, name=name, backend=Backend.PYTHON)
    with EmbeddedServer(repository, startup_timeout=300) as running:
        yield running


@pytest.mark.parametrize("name", ["detr", "rtdetr"])
def test_a_transformers_detr_file_gives_transformers_own_post_processing(
    name: str, exported: tuple[list[Path], Path], server: EmbeddedServer, tmp_path: Path
) -> None:
    images, folder = exported
    expected = json.loads((folder / "predictions.json").read_text())[name]
    target = ["--url", server.grpc_url, "--model", name]
    if name == "detr":
        (tmp_path / "detr.toml").write_text(DETR_PROFILE)
        target += ["--profile", str(tmp_path / "detr.toml")]
    models = run_cli_in_process("models", *target)
    assert models.returncode == 0, models.stderr[-3000:]
    activation = "softmax, DETR" if name == "detr" else "sigmoid, RT-DETR"
    assert "DETR family" in models.stdout and activation in models.stdout, models.stdout
    done = run_cli_in_process("infer", *target, "--score", "0", *map(str, images))
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert summary["ok"] == len(images)
    shares = {}
    for record in records:
        photo = Path(record["source"])
        height, width = cv2.imread(str(photo)).shape[:2]
        # The file's own run: what the app must give. torch's: the same up to the trace.
        theirs = theirs_in_the_image(expected[photo.name]["onnxruntime"], width, height)
        assert len(theirs) >= 90, (name, photo.name, "every query gives a detection at score 0")
        assert len(record["detections"]) == len(theirs), (name, photo.name)
        shares[photo.name] = agreeing(record["detections"], theirs) / len(theirs)
    print(name, "share of transformers' detections the app gives (class, 1 px, 0.01):", shares)
    assert shares["astronaut.png"] == 1.0, "the processor's own pixels: every detection"
    assert shares["coffee.png"] >= (1.0 if name == "detr" else 0.99), shares
