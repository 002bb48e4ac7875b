"""A torchvision detector, exported to ONNX as torchvision documents it, dropped on the app as
a model file (`--model model.onnx`, no server given: the embedded server serves the file),
gives what the file gives run by onnxruntime on the photo as torchvision feeds it (the same
boxes within 0.01 px, labels, scores within 1e-4), and torchvision's own predictions in torch
up to the export's own difference (the traced resize of a non-square photo moves boxes by a
pixel or so, which can change what NMS keeps). The export and torchvision's predictions come
from the reference venv (tests/ultralytics/torchvision_reference.py, cached per machine); the
app never imports torch.

Its layout (torchvision-style `boxes` / `labels` / `scores`, K varying) with a dynamic height
and width means the model resizes and normalises by itself (its GeneralizedRCNNTransform):
the app sends the photo as it is, 0..1, and reads boxes in its pixels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.integration.test_cli_infer import astronaut_coffee_and_crop, parse, run_cli
from tests.ultralytics import venv as reference

pytestmark = [pytest.mark.slow]
BOX_PX, SCORE = 0.01, 1e-4  # against the file's own run


def photos(folder: Path) -> list[Path]:
    return astronaut_coffee_and_crop(folder, slice(121, 388))  # the crop a portrait


def iou(a: list[float], b: list[float]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def test_a_torchvision_detector_file_gives_torchvisions_own_predictions(tmp_path: Path) -> None:
    images = photos(tmp_path)
    exported = reference.torchvision_reference(images)
    expected = json.loads((exported / "predictions.json").read_text())
    models = run_cli("models", "--model", str(exported / "model.onnx"))
    assert models.returncode == 0, models.stderr[-3000:]
    assert "preprocess raw" in models.stdout and "boxes in original-image pixels" in models.stdout
    # --score 0: every detection the model gives (its own threshold, 0.05, is in the graph).
    done = run_cli("infer", "--model", str(exported / "model.onnx"), "--score", "0", *map(str, images))
    assert done.returncode == 0, done.stderr[-3000:]
    records, summary = parse(done.stdout)
    assert summary["ok"] == len(images)
    agreement = {}
    for record in records:
        name = Path(record["source"]).name
        ours = record["detections"]
        theirs = expected[name]["onnxruntime"]
        assert len(theirs["boxes"]) >= 10, "the seeded model finds something on every photo"
        assert len(ours) == len(theirs["boxes"]), name
        for got, (box, label, score) in zip(matched(ours, theirs), each(theirs), strict=True):
            assert got["class_id"] == label, (name, box)
            assert np.allclose(got["box"], box, atol=BOX_PX), (name, got["box"], box)
            assert got["score"] == pytest.approx(score, abs=SCORE), name
        # torchvision in torch: the same on a photo whose resize the trace keeps exactly; on
        # the others most boxes still agree (the rest are the export's own difference).
        torch_boxes = each(expected[name]["torch"])
        close = [
            any(d["class_id"] == label and iou(d["box"], box) >= 0.9 for d in ours)
            for box, label, _ in torch_boxes
        ]
        agreement[name] = sum(close) / len(close)
    print("share of torch's boxes the app gives (same class, IoU >= 0.9):", agreement)
    assert agreement["astronaut.png"] == 1.0
    assert min(agreement.values()) >= 0.8, agreement


def each(theirs: dict[str, list]) -> list[tuple[list[float], int, float]]:
    return list(zip(theirs["boxes"], theirs["labels"], theirs["scores"], strict=True))


def matched(ours: list[dict], theirs: dict[str, list]) -> list[dict]:
    """Our detection for each of theirs, in their order: random weights give near-equal
    scores, so by class and box overlap rather than by rank."""
    unmatched, out = list(range(len(ours))), []
    for box, label, _score in each(theirs):
        best = max(unmatched, key=lambda i: (ours[i]["class_id"] == label, iou(ours[i]["box"], box)))
        unmatched.remove(best)
        out.append(ours[best])
    return out
