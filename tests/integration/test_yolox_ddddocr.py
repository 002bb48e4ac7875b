"""A real trained YOLOX model, ddddocr's text detector (`common_det.onnx`, MIT), served by
Triton, gives ddddocr's own boxes: the app recognises the raw YOLOX layout ([1, 3549, 6] at
416x416, one class named by the config's labels), feeds it as YOLOX does (the image in the
top-left corner, padded with 114 right and bottom, BGR, 0..255) and decodes grid + stride,
exp w/h, objectness x class score and NMS. ddddocr itself (tests/reference/ddddocr_reference.py)
is the reference, with its thresholds (score 0.1, NMS IoU 0.45) and its integer boxes."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data

from app.resources import model_files_dir
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, in_input_order, parse, run_cli
from tests.reference.ddddocr_reference import ddddocr_boxes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MODEL = "ddddocr_det"
CONFIG = """name: "ddddocr_det"
backend: "python"
max_batch_size: 0
input [ { name: "images" data_type: TYPE_FP32 dims: [ 1, 3, 416, 416 ] } ]
output [ { name: "output" data_type: TYPE_FP32 dims: [ 1, 3549, 6 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "labels" value { string_value: "text" } }
"""


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Text (skimage's page and text), and photos with little or none."""
    folder = tmp_path_factory.mktemp("ddddocr_photos")
    out = []
    for name in ("page", "text", "astronaut", "coffee"):
        image = getattr(skimage.data, name)()
        rgb = np.stack([image] * 3, axis=-1) if image.ndim == 2 else image
        path = folder / f"{name}.png"
        cv2.imwrite(str(path), bgr(rgb))
        out.append(path)
    return out


@pytest.fixture(scope="module")
def reference(photos: list[Path]) -> dict[str, Any]:
    return ddddocr_boxes(photos)


@pytest.fixture(scope="module")
def server(reference: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    repo = tmp_path_factory.mktemp("ddddocr_repository")
    (repo / MODEL / "1").mkdir(parents=True)
    shutil.copy(reference["model"], repo / MODEL / "1" / "model.onnx")
    wrapper = model_files_dir() / "onnx_model.py"  # the app's onnxruntime model
    shutil.copy(wrapper, repo / MODEL / "1" / "model.py")
    (repo / MODEL / "config.pbtxt").write_text(CONFIG, encoding="utf-8")
    with EmbeddedServer(repo, startup_timeout=180) as running:
        yield running


def test_models_recognises_the_yolox_layout(server: EmbeddedServer) -> None:
    done = run_cli("models", "--url", server.grpc_url, "--model", MODEL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "output: yolox (output)" in done.stdout
    assert "layout: YOLOX raw output [3549, 5 + 1]" in done.stdout
    assert "preprocess letterbox_top_left" in done.stdout and "BGR" in done.stdout


def test_the_records_equal_ddddocr(
    server: EmbeddedServer, photos: list[Path], reference: dict[str, Any]
) -> None:
    done = run_cli(
        "infer",
        "--url",
        server.grpc_url,
        "--model",
        MODEL,
        "--score",
        "0.1",
        "--iou",
        "0.45",
        *map(str, photos),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records, _summary = parse(done.stdout)
    records = in_input_order(records, photos)
    total, worst = 0, 0.0
    for record, theirs in zip(records, reference["boxes"], strict=True):
        # ddddocr truncates its boxes to integers (and clips the top-left at 0)
        mine = sorted([int(v) for v in d["box"]] for d in record["detections"])
        assert len(mine) == len(theirs), record["source"]
        for a, b in zip(mine, sorted(theirs), strict=True):
            worst = max(worst, float(np.abs(np.subtract(a, b)).max()))
        assert all(d["label"] == "text" for d in record["detections"])
        total += len(theirs)
    print(f"\n{total} ddddocr boxes compared: worst {worst} px (integer boxes)")
    assert total >= 40 and worst <= 1
