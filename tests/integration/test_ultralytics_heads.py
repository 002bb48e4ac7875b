"""Ultralytics' heads beyond YOLOv8 detect, each exported by Ultralytics 8.4 itself and served
as its Triton guide says, give Ultralytics' own predictions through the same server: the
end-to-end (NMS-free) YOLOv10 / YOLO26 heads (detect, pose, OBB), the raw YOLOv8 ones (pose,
OBB) and RT-DETR, at two input sizes. The segment and classify heads (masks, top 5):
test_ultralytics_segment_classify.py, which deploys its exports with this module's helpers.

The exports (tests/ultralytics/export_heads.py, cached per machine): random weights from
Ultralytics' yaml files, seeded, initialised on the photos so that they give detections of
many classes (export_model.py's recipe on every class branch); fixed input size, `nms=False`.
Triton serves each through the app's onnxruntime Python-backend model
(resources/model_files/onnx_model.py) with the exporter's metadata in the config parameter
`metadata`; nothing else tells the app the layout, the task or the names.

Ultralytics keeps a box that lies wholly outside the image (empty once clipped); the app
does not report such a box (postprocess.py): those are left out of the comparison. RT-DETR
(Ultralytics' own RTDETR predictor: the image stretched to imgsz, normalised boxes, no NMS)
is left with its seeded weights; its boxes are compared clipped to the image, as the app
reports every box.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.resources import model_files_dir
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import astronaut_coffee_and_crop, in_input_order, parse, run_cli
from tests.ultralytics import venv as reference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

# MODEL:IMGSZ -> Ultralytics' task; two input sizes across the families.
HEADS = {
    "yolo26n:320": "detect",
    "yolov10n:256": "detect",
    "yolo26n-pose:320": "pose",
    "yolov8n-pose:256": "pose",
    "yolo26n-obb:320": "obb",
    "yolov8n-obb:256": "obb",
    "rtdetr-l:320": "detect",
}
# The score threshold of each comparison: Ultralytics' default, lower for the one-class raw
# pose head, whose person scores on these photos stay below it (one detection at 0.25), and
# RT-DETR, left with its seeded weights (scores ~0.03).
CONF = {"yolov8n-pose:256": 0.02, "rtdetr-l:320": 0.02}
BOX_PX, SCORE, KEYPOINT_PX, ANGLE = 0.5, 1e-3, 1.0, 1e-3

CONFIG = """name: "%(name)s"
backend: "python"
max_batch_size: 0
input [ { name: "images" data_type: TYPE_FP32 dims: [ 1, 3, %(size)d, %(size)d ] } ]
output [ %(outputs)s ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "metadata" value { string_value: "%(metadata)s" } }
"""


def model_name(spec: str) -> str:
    return spec.replace(":", "_").replace("-", "_")


def heads_photos(folder: Path) -> list[Path]:
    """astronaut and coffee (the exports are initialised on these two) and an odd-sized crop."""
    return astronaut_coffee_and_crop(folder, slice(21, 388))


def deploy(exports: dict[str, Path], repo: Path) -> None:
    """Each export as Ultralytics' Triton guide deploys it, run by the app's onnxruntime
    Python-backend model, named `model_name(spec)`."""
    for spec, folder in exports.items():
        model = repo / model_name(spec)
        (model / "1").mkdir(parents=True)
        shutil.copy(folder / "model.onnx", model / "1" / "model.onnx")
        shutil.copy(model_files_dir() / "onnx_model.py", model / "1" / "model.py")
        outputs = json.loads((folder / "outputs.json").read_text(encoding="utf-8"))
        declared = ", ".join(
            f'{{ name: "{o["name"]}" data_type: TYPE_FP32 dims: [ {", ".join(map(str, o["dims"]))} ] }}'
            for o in outputs
        )
        metadata = (folder / "metadata.txt").read_text(encoding="utf-8")
        size = int(spec.split(":")[1])
        text = CONFIG % {"name": model_name(spec), "size": size, "outputs": declared, "metadata": metadata}
        (model / "config.pbtxt").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return heads_photos(tmp_path_factory.mktemp("heads_photos"))


@pytest.fixture(scope="module")
def server(photos: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    repo = tmp_path_factory.mktemp("heads_repository")
    deploy(reference.exported_heads(list(HEADS), photos[:2]), repo)
    with EmbeddedServer(repo, startup_timeout=300) as running:
        yield running


def is_visible(detection: dict[str, Any], width: int, height: int) -> bool:
    x1, y1, x2, y2 = detection["box"]
    return min(x2, width) > max(x1, 0) and min(y2, height) > max(y1, 0)


def _clipped(box: list[float], width: int, height: int) -> list[float]:
    x1, y1, x2, y2 = box
    return [min(max(x1, 0), width), min(max(y1, 0), height), min(max(x2, 0), width), min(max(y2, 0), height)]


def paired(mine: list[dict[str, Any]], theirs: list[dict[str, Any]], key: str) -> list[tuple[dict, dict]]:
    """Each of Ultralytics' detections with the app's of its class nearest to it (by `key`:
    box or obb); scores a few 1e-7 apart may come in either order."""
    free = list(range(len(mine)))
    pairs = []
    for b in theirs:
        same = [i for i in free if mine[i]["class_id"] == b["class_id"]]
        assert same, f"no detection of class {b['class_id']} left for {b}"
        i = min(same, key=lambda k: float(np.abs(np.subtract(mine[k][key][:4], b[key][:4])).max()))
        free.remove(i)
        pairs.append((mine[i], b))
    return pairs


def _angle_gap(a: float, b: float) -> float:
    return abs((a - b + math.pi / 2) % math.pi - math.pi / 2)  # a box turned by pi is the same


@pytest.mark.parametrize("spec", list(HEADS))
def test_the_records_equal_ultralytics_predictions(
    spec: str, server: EmbeddedServer, photos: list[Path]
) -> None:
    task, name, size = HEADS[spec], model_name(spec), int(spec.split(":")[1])
    url = f"grpc://{server.grpc_url}/{name}"
    theirs_all = reference.ultralytics_predictions(
        url,
        photos,
        conf=CONF.get(spec, 0.25),
        iou=0.7,
        imgsz=size,
        rect=False,
        task=task,
        family="rtdetr" if spec.startswith("rtdetr") else "yolo",
    )
    assert theirs_all["imgsz"] == [size, size]
    score = str(CONF.get(spec, 0.25))
    done = run_cli("infer", "--url", server.grpc_url, "--model", name, "--score", score, *map(str, photos))
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    records = in_input_order(records, photos)
    assert summary["ok"] == len(photos)
    names = {int(k): v for k, v in theirs_all["names"].items()}
    key = "obb" if task == "obb" else "box"
    compared, worst = 0, {"box": 0.0, "score": 0.0, "keypoint": 0.0, "angle": 0.0}
    for record, result in zip(records, theirs_all["results"], strict=True):
        w, h = result["width"], result["height"]
        # The app clips every box to the image; Ultralytics' RT-DETR predictor does not.
        theirs = [{**d, "box": _clipped(d["box"], w, h)} for d in result["detections"] if is_visible(d, w, h)]
        mine = record["detections"]
        assert len(mine) == len(theirs), (spec, record["source"])
        for a, b in paired(mine, theirs, key):
            assert a["label"] == names[b["class_id"]]
            worst["box"] = max(worst["box"], float(np.abs(np.subtract(a[key][:4], b[key][:4])).max()))
            worst["score"] = max(worst["score"], abs(a["score"] - b["score"]))
            if task == "pose":
                gap = np.abs(np.subtract(a["keypoints"], b["keypoints"])[:, :2]).max()
                worst["keypoint"] = max(worst["keypoint"], float(gap))
            if task == "obb":
                worst["angle"] = max(worst["angle"], _angle_gap(a["obb"][4], b["obb"][4]))
            compared += 1
    print(f"\n{spec}: {compared} detections compared, worst {worst}")
    assert compared >= 20, spec
    assert worst["box"] <= BOX_PX and worst["score"] <= SCORE
    assert worst["keypoint"] <= KEYPOINT_PX and worst["angle"] <= ANGLE


def test_models_says_which_layout_and_why(server: EmbeddedServer) -> None:
    done = run_cli("models", "--url", server.grpc_url)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "layout: end-to-end (NMS-free) output0 [300, 6] (metadata end2end)" in out
    assert "layout: end-to-end (NMS-free) output0 [300, 57] (metadata end2end): boxes + 17x3 keypoints" in out
    assert "layout: raw YOLOv8/11-OBB output0 [1, 85, 2100]" not in out  # 256: 1344 anchors
    assert "layout: raw YOLOv8/11-OBB output0 [1, 85, 1344]: 4 + 80 classes + angle" in out
    assert "task: obb, oriented boxes" in out
