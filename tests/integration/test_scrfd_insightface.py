"""SCRFD face detectors in insightface's export layout, served from their model files (the
folder `repository save` writes: the app's onnxruntime Python-backend wrapper; one server for
the file's tests, test_model_files.py shows `--model FILE` with no server gives the same
records), give insightface's own `SCRFD.detect` on the same photos: every face within 1 px
and 0.01 of score, its 5 keypoints within 1 px.

insightface's detector is its published code (the 0.7.3 sdist's model_zoo/scrfd.py,
tests/reference/insightface_reference.py), run on two small networks with random weights in
the layout of its released files (tests/reference/scrfd_runner.py): 9 outputs named by
number, told apart by their row counts, and 6 named score_8 ... bbox_32 without keypoints.
Without a batch axis on the outputs, as insightface's files have them.

What the app must do as insightface does, each of which this test fails without: the image
top-left at insightface's own size (int of the scaled side) on black, one scale for both
axes back (the new height over the height), NMS at 0.4 in the image's pixels with
pixel-inclusive (+1) areas. insightface keeps boxes in the black padding and points outside
the image; the app clips to the image and drops what is left empty, so theirs are clipped
the same way before comparing (a 600x400 photo: ~10% of insightface's boxes lie wholly in
the padding below it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data

from app.inference.model_files.config import Backend
from app.inference.model_files.save import save_model_folder
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process
from tests.integration.test_cli_infer import bgr, parse
from tests.pairing import matched_closest_first
from tests.reference.insightface_reference import scrfd_predictions

pytestmark = [pytest.mark.slow]
BOX_PX, SCORE, POINT_PX = 1.0, 0.01, 1.0
MODELS = ("scrfd_kps", "scrfd_named")


def photos(folder: Path) -> list[Path]:
    square = folder / "astronaut.png"  # 512x512 -> 320x320: one scale, no padding
    cv2.imwrite(str(square), bgr(skimage.data.astronaut()))
    wide = folder / "coffee.png"  # 600x400 -> 320x213 top-left, 107 rows of padding below
    cv2.imwrite(str(wide), bgr(skimage.data.coffee()))
    return [square, wide]


Face = tuple[list[float], float, "np.ndarray | None"]  # box, score, keypoints


def theirs_in_the_image(predicted: dict, width: int, height: int) -> list[Face]:
    """insightface's faces clipped to the image, those left empty dropped: what the app gives."""
    points = predicted["keypoints"] or [None] * len(predicted["scores"])
    out = []
    for box, score, kps in zip(predicted["boxes"], predicted["scores"], points, strict=True):
        x1, x2 = (min(max(v, 0.0), width) for v in (box[0], box[2]))
        y1, y2 = (min(max(v, 0.0), height) for v in (box[1], box[3]))
        if x2 > x1 and y2 > y1:
            clipped = None
            if kps is not None:
                clipped = np.array(kps, np.float64)
                clipped[:, 0] = clipped[:, 0].clip(0, width)
                clipped[:, 1] = clipped[:, 1].clip(0, height)
            out.append(([x1, y1, x2, y2], score, clipped))
    return out


def matched(ours: list[dict], theirs: list[Face]) -> int:
    """How many of theirs have one of ours (each used once) within BOX_PX, SCORE and
    POINT_PX; the closest pairs first."""
    pairs = []
    for i, (box, score, kps) in enumerate(theirs):
        for j, d in enumerate(ours):
            off = max(abs(a - b) for a, b in zip(d["box"], box, strict=True))
            if off > BOX_PX or abs(d["score"] - score) > SCORE:
                continue
            if kps is not None:
                assert d.get("keypoints"), "a face of a keypoint model without its keypoints"
                if np.abs(np.array(d["keypoints"])[:, :2] - kps).max() > POINT_PX:
                    continue
            pairs.append((off + abs(d["score"] - score), i, j))
    return matched_closest_first(pairs)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], dict[str, Any], Path]:
    """The photos, insightface's detections on them, and the folder of the two model files."""
    folder = tmp_path_factory.mktemp("scrfd")
    images = photos(folder)
    return images, scrfd_predictions(folder / "reference", images), folder / "reference"


@pytest.fixture(scope="module")
def server(
    reference: tuple[list[Path], dict[str, Any], Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedServer]:
    repository = tmp_path_factory.mktemp("scrfd_repository")
    for name in MODELS:
        save_model_folder(reference[2] / name / "model.onnx", repository, name=name, backend=Backend.PYTHON)
    with EmbeddedServer(repository, startup_timeout=300) as running:
        yield running


@pytest.mark.parametrize("name", MODELS)
def test_an_insightface_scrfd_file_gives_insightface_own_detections(
    name: str, reference: tuple[list[Path], dict[str, Any], Path], server: EmbeddedServer
) -> None:
    images, predictions, _folder = reference
    expected = predictions[name]
    target = ("--url", server.grpc_url, "--model", name)
    models = run_cli_in_process("models", *target)
    assert models.returncode == 0, models.stderr[-3000:]
    why = "row counts" if name == "scrfd_kps" else "named score_/bbox_/kps_"
    assert "SCRFD / RetinaFace face detector" in models.stdout and why in models.stdout, models.stdout
    assert "letterbox_insightface" in models.stdout and "size 320x320" in models.stdout, models.stdout
    done = run_cli_in_process("infer", *target, *map(str, images))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "transport: shared memory (inputs and outputs)" in done.stderr  # outputs with no batch axis
    records, summary = parse(done.stdout)
    assert summary["ok"] == len(images), records
    for record in records:
        photo = Path(record["source"])
        theirs = theirs_in_the_image(expected[photo.name], record["width"], record["height"])
        assert len(theirs) >= 50, (name, photo.name, "random weights find dozens of 'faces'")
        assert len(record["detections"]) == len(theirs), (name, photo.name)
        assert {d["label"] for d in record["detections"]} == {"face"}
        assert matched(record["detections"], theirs) == len(theirs), (name, photo.name)
