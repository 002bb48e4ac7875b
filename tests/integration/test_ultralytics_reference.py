"""A real Ultralytics export, deployed as Ultralytics' Triton guide says, gives Ultralytics'
own detections: the reference is Ultralytics 8.4 itself, in its own venv
(tests/ultralytics/, `make ultralytics`), predicting through the same Triton server.

The export (tests/ultralytics/export_model.py, cached per machine): YOLOv8n from Ultralytics'
yolov8n.yaml, 18 classes of its own names, exported to ONNX with dynamic axes at imgsz 320.
Triton serves it (the embedded server has no onnxruntime backend: a Python-backend model runs
the file with onnxruntime, resources/model_files/onnx_model.py) with dims [3, -1, -1] and, as the
guide writes it, the exporter's metadata dict in the config parameter `metadata`. Nothing else
tells the app the size or the names: fed 640 (the default for dynamic dims) or named
`class N`, the records would differ.

Ultralytics reads that metadata (ast.literal_eval), letterboxes each photo to 320x320 and runs
its own NMS (conf 0.25, IoU 0.7, max 300). The app's `infer` records must equal it: the same
detections in the same order, boxes within 0.5 px, scores within 1e-3, the same classes and
names. Photos: skimage's astronaut, coffee, chelsea and rocket (two give no detection at all),
odd-sized crops (the letterbox's odd pixel) and big JPEG copies (decoded in full, as
Ultralytics does).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import skimage.data

from app.inference.profile_kinds import Task
from app.inference.profiles.export_metadata import onnx_file_metadata, parse_metadata_text
from app.resources import model_files_dir
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import bgr, parse, run_cli
from tests.ultralytics import venv as reference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MODEL = "yolov8n_export"
BOX_PX, SCORE = 0.5, 1e-3
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")

CONFIG = """name: "%(name)s"
backend: "python"
max_batch_size: 4
input [ { name: "images" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] } ]
output [ { name: "output0" data_type: TYPE_FP32 dims: [ %(channels)d, -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
# As Ultralytics' Triton guide writes it: the exporter's metadata dict, with %%s.
parameters {
  key: "metadata"
  value {
    string_value: "%(metadata)s"
  }
}
"""


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The photos as PNG files both sides read (lossless: no decoder differences)."""
    folder = tmp_path_factory.mktemp("ultralytics_photos")
    out = []
    for name in PHOTOS:
        path = folder / f"{name}.png"
        cv2.imwrite(str(path), bgr(getattr(skimage.data, name)()))
        out.append(path)
    return out


@pytest.fixture(scope="module")
def export(photos: list[Path]) -> Path:
    """The export folder (model.onnx, metadata.txt); the network is initialised on the photos."""
    return reference.exported_model(photos)


@pytest.fixture(scope="module")
def inputs(photos: list[Path], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The photos, crops of odd sizes (an odd padding pixel on either axis) and the photos
    2.2x bigger as JPEG (the app decodes a JPEG at 1/2 or 1/4 when the model needs no more;
    not for an Ultralytics export, whose predictor decodes in full: the pixels would differ)."""
    folder = tmp_path_factory.mktemp("ultralytics_inputs")
    out = []
    for path in photos:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        assert image is not None
        shutil.copy(path, folder / path.name)
        out.append(folder / path.name)
        h, w = image.shape[:2]
        crop = folder / f"{path.stem}-crop.png"
        cv2.imwrite(str(crop), image[h // 7 : h - h // 5, w // 9 : w - w // 11])
        out.append(crop)
        big = folder / f"{path.stem}-big.jpg"
        enlarged = cv2.resize(image, None, fx=2.2, fy=2.2, interpolation=cv2.INTER_CUBIC)
        cv2.imwrite(str(big), enlarged, [cv2.IMWRITE_JPEG_QUALITY, 95])
        out.append(big)
    return out


@pytest.fixture(scope="module")
def server(export: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A Triton repository with the export deployed per Ultralytics' guide, served."""
    repo = tmp_path_factory.mktemp("ultralytics_repository")
    model = repo / MODEL
    (model / "1").mkdir(parents=True)
    shutil.copy(export / "model.onnx", model / "1" / "model.onnx")
    shutil.copy(model_files_dir() / "onnx_model.py", model / "1" / "model.py")
    metadata = (export / "metadata.txt").read_text(encoding="utf-8")
    names = eval_names(metadata)
    (model / "config.pbtxt").write_text(
        CONFIG % {"name": MODEL, "channels": 4 + len(names), "metadata": metadata}, encoding="utf-8"
    )
    with EmbeddedServer(repo, startup_timeout=180) as running:
        yield running


def eval_names(metadata: str) -> dict[int, str]:
    """The class names of the metadata text (the test's own reading, as Ultralytics does)."""
    import ast

    names: dict[int, str] = ast.literal_eval(metadata)["names"]
    return names


@pytest.fixture(scope="module")
def ultralytics(server: EmbeddedServer, inputs: list[Path]) -> dict[str, Any]:
    # imgsz and rect as Ultralytics' client read them from the metadata before 8.3 (and still
    # does for an export without dynamic axes): 8.4 takes imgsz from its own argument (640)
    # and pads to a multiple of 32 for a dynamic export. See tests/ultralytics/predict.py.
    url = f"grpc://{server.grpc_url}/{MODEL}"
    return reference.ultralytics_predictions(url, inputs, conf=0.25, iou=0.7, imgsz=320, rect=False)


@pytest.fixture(scope="module")
def ours(server: EmbeddedServer, inputs: list[Path]) -> dict[str, dict[str, Any]]:
    paths = [str(p) for p in inputs]
    done = run_cli("infer", "--url", server.grpc_url, "--model", MODEL, *paths, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "input size" not in done.stderr  # no note about a default size: the metadata named it
    records, summary = parse(done.stdout)
    assert summary["ok"] == len(inputs)
    return {Path(r["source"]).name: r for r in records}


def test_ultralytics_fed_the_export_its_own_size(ultralytics: dict[str, Any], export: Path) -> None:
    assert ultralytics["ultralytics"].startswith("8.4.")
    assert ultralytics["imgsz"] == [320, 320]
    assert ultralytics["names"]["2"] == "hand" and len(ultralytics["names"]) == 18
    # The photos give from none to hundreds of detections: the comparison has work to do.
    counts = [len(r["detections"]) for r in ultralytics["results"]]
    assert 0 in counts and max(counts) >= 50, counts
    assert len({d["class_id"] for r in ultralytics["results"] for d in r["detections"]}) >= 10


def test_the_onnx_file_carries_the_same_metadata(export: Path) -> None:
    """The file's own metadata_props (what `--model FILE.onnx` will read) say what the config
    parameter says."""
    from_file = onnx_file_metadata(export / "model.onnx")
    from_text = parse_metadata_text((export / "metadata.txt").read_text(encoding="utf-8"), "metadata.txt")
    assert from_file is not None and from_file.source.endswith("metadata_props")
    assert (from_file.names, from_file.imgsz, from_file.stride, from_file.task) == (
        from_text.names,
        (320, 320),
        32,
        Task.DETECT,
    )
    assert from_text.names[:3] == ("person", "face", "hand") and len(from_text.names) == 18


def test_models_shows_the_size_and_names_from_the_metadata(server: EmbeddedServer) -> None:
    done = run_cli("models", "--url", server.grpc_url, "--model", MODEL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "size 320x320 (from Ultralytics metadata imgsz)" in done.stdout
    assert "labels: person, face, hand, cat" in done.stdout
    assert "thresholds: score 0.25, iou 0.7, max 300 detections" in done.stdout


def _paired(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[tuple[dict, dict]]:
    """Each of Ultralytics' detections with the app's of its class nearest to it. Both sides
    list them best score first; two scores a few 1e-7 apart (the last bit of a float32 /255
    or of OpenCV's resize in another release) may come in either order, so pairs are found by
    box, not by position."""
    free = list(range(len(mine)))
    pairs = []
    for b in theirs:
        same = [i for i in free if mine[i]["class_id"] == b["class_id"]]
        assert same, f"no detection of class {b['class_id']} left for {b}"
        i = min(same, key=lambda k: float(np.abs(np.subtract(mine[k]["box"], b["box"])).max()))
        free.remove(i)
        pairs.append((mine[i], b))
    return pairs


def test_the_records_equal_ultralytics_predictions(
    ultralytics: dict[str, Any], ours: dict[str, dict[str, Any]], inputs: list[Path]
) -> None:
    names = {int(k): v for k, v in ultralytics["names"].items()}
    worst_box, worst_score, compared = 0.0, 0.0, 0
    for path, theirs in zip(inputs, ultralytics["results"], strict=True):
        record = ours[path.name]
        assert (record["width"], record["height"]) == (theirs["width"], theirs["height"])
        mine = record["detections"]
        assert len(mine) == len(theirs["detections"]), path.name
        scores = [d["score"] for d in mine]
        assert scores == sorted(scores, reverse=True)
        for a, b in _paired(mine, theirs["detections"]):
            assert a["label"] == names[b["class_id"]], path.name
            worst_box = max(worst_box, float(np.abs(np.subtract(a["box"], b["box"])).max()))
            worst_score = max(worst_score, abs(a["score"] - b["score"]))
            compared += 1
    print(f"\n{compared} detections compared: worst box {worst_box:.4f} px, worst score {worst_score:.2e}")
    assert compared >= 100
    assert worst_box <= BOX_PX and worst_score <= SCORE
