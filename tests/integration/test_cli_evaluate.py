"""`python -m app evaluate` against the real server: hand-made datasets in each of the four
formats give pycocotools' figures (to 1e-4) and the same figures in every format; a bad
dataset loses only what is bad, and says where; the product's own exports read back as
ground truth (mAP 1.0); keypoints (OKS) and masks; two models; records and plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from app.evaluation.sigmas import oks_sigmas
from app.server.embedded import EmbeddedServer
from tests.evaluation_data import (
    Img,
    Obj,
    assert_close,
    reference,
    reference_class_ap,
    reference_metrics,
    write_dataset,
    write_images,
)
from tests.integration.test_cli_infer import run_cli

FORMATS = ("coco", "yolo", "voc", "labelme")
CLASSES = ["face", "hand", "car"]  # fixed_versions' labels
# fixed_versions (version 2, the one served by default) finds, on every 640x640 image,
# face [110, 150, 310, 350] 0.9 and car [400, 300, 600, 500] 0.8 (tests/models/README.md).
# Named in alphabetical order: COCOeval ranks detections of equal scores (all of them here) in
# image order, which is the file's id order in COCO and the path order in the other formats.
FIXED = [
    # A car where the model says face: a confusion; the model's car there is a false detection.
    Img("a_confused.png", 640, 640, [Obj("car", (110, 150, 310, 350))]),
    Img("b_elsewhere.png", 640, 640, [Obj("face", (400, 40, 500, 140)), Obj("Car", (400, 300, 600, 500))]),
    Img("c_empty.png", 640, 640, []),  # both detections are false positives
    Img("d_exact.png", 640, 640, [Obj("face", (110, 150, 310, 350)), Obj("car", (400, 300, 600, 500))]),
    Img(
        "e_shifted.png",
        640,
        640,
        # IoU 0.82 for both (found at 0.5 to 0.8, not above), and a hand nothing finds.
        [Obj("face", (100, 140, 300, 340)), Obj("car", (380, 300, 580, 500)), Obj("hand", (10, 10, 60, 60))],
    ),
]


def evaluate(triton: EmbeddedServer, dataset: Path, *args: str, out: Path, code: int = 0) -> dict[str, Any]:
    done = run_cli(
        "evaluate", "--url", triton.grpc_url, str(dataset), "--output", str(out), *args, timeout=180
    )
    assert done.returncode == code, done.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert done.stdout == ""
    return report | {"_stderr": done.stderr}


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def fixed_reports(triton: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reports = {}
    for fmt in FORMATS:
        root = tmp_path_factory.mktemp(f"fixed_{fmt}")
        dataset, extra = write_dataset(fmt, root / "data", FIXED, CLASSES)
        out, records = root / "report.json", root / "records.jsonl"
        report = evaluate(
            triton, dataset, "--model", "fixed_versions", "--records", str(records), *extra, out=out
        )
        reports[fmt] = (report, records_of(records))
    return reports


@pytest.mark.parametrize("fmt", FORMATS)
def test_metrics_equal_pycocotools_in_each_format(fixed_reports: dict[str, Any], fmt: str) -> None:
    report, records = fixed_reports[fmt]
    assert report["dataset"]["format"] == fmt
    assert report["dataset"]["images"] == len(FIXED) and report["dataset"]["annotations"] == 8
    assert report["dataset"]["dropped"]["annotations"] == 0
    assert len(records) == len(FIXED) and all(r["ok"] and r["model"] == "fixed_versions" for r in records)
    expected = reference(FIXED, CLASSES, records)
    assert_close(report["metrics"], reference_metrics(expected))
    for k, name in enumerate(CLASSES):
        row = next(r for r in report["per_class"] if r["class"] == name)
        ap, ap50 = reference_class_ap(expected, k)
        assert_close({"ap": row["ap"], "ap50": row["ap50"]}, {"ap": ap, "ap50": ap50})
    # Not a trivial case: some found, some not.
    assert 0.2 < report["metrics"]["map50"] < 0.9


def test_the_same_dataset_in_four_formats_gives_the_same_report(fixed_reports: dict[str, Any]) -> None:
    coco = fixed_reports["coco"][0]
    for fmt in FORMATS[1:]:
        other = fixed_reports[fmt][0]
        assert_close(other["metrics"], coco["metrics"], 1e-6)
        assert other["per_class"] == coco["per_class"]
        assert other["confusion_matrix"]["matrix"] == coco["confusion_matrix"]["matrix"]
        assert [w["name"] for w in other["worst_images"]] == [w["name"] for w in coco["worst_images"]]


def test_per_class_operating_point_confusion_and_worst_images(fixed_reports: dict[str, Any]) -> None:
    report = fixed_reports["coco"][0]
    rows = {r["class"]: r for r in report["per_class"]}
    # face: found on exact and shifted (TP 2); detected on empty, elsewhere and confused (FP 3);
    # the face elsewhere missed (FN 1). All its detections score 0.9: one threshold, keep all.
    assert (rows["face"]["tp"], rows["face"]["fp"], rows["face"]["fn"], rows["face"]["gt"]) == (2, 3, 1, 3)
    assert rows["face"]["score_threshold"] == pytest.approx(0.9, abs=1e-6)
    assert rows["face"]["precision"] == pytest.approx(2 / 5) and rows["face"]["recall"] == pytest.approx(
        2 / 3
    )
    assert rows["face"]["f1"] == pytest.approx(2 * 2 / (2 * 2 + 3 + 1))
    # car: exact, shifted, elsewhere ("Car": case-insensitive) found; empty and confused wrong.
    assert (rows["car"]["tp"], rows["car"]["fp"], rows["car"]["fn"], rows["car"]["gt"]) == (3, 2, 1, 4)
    # hand: never detected: no threshold, recall 0, precision undefined (null, not NaN).
    assert rows["hand"]["tp"] == 0 and rows["hand"]["fn"] == 1 and rows["hand"]["precision"] is None
    assert rows["hand"]["score_threshold"] is None and rows["hand"]["recall"] == 0.0
    cm = report["confusion_matrix"]
    assert cm["labels"] == ["face", "hand", "car", "background"] and cm["iou"] == 0.5
    m = np.array(cm["matrix"])
    assert m[0, 0] == 2 and m[2, 2] == 3  # the diagonal is each class's TP
    assert m[2, 0] == 1  # the car on "confused.png" detected as a face
    assert m[1, 3] == 1 and m[0, 3] == 1  # the hand and the face elsewhere: missed
    assert m[3, 0] == 2 and m[3, 2] == 2  # false detections: faces on empty/elsewhere, cars on empty/confused
    assert m[:3].sum(axis=1).tolist() == [3, 1, 4]  # every object once
    worst = report["worst_images"]
    # Most errors (FP + FN) first, ties: more misses first; an image without errors is not listed.
    assert [(w["name"], w["tp"], w["fp"], w["fn"]) for w in worst] == [
        ("a_confused.png", 0, 2, 1),
        ("b_elsewhere.png", 1, 1, 1),
        ("c_empty.png", 0, 2, 0),
        ("e_shifted.png", 2, 0, 1),
    ]
    speed = report["speed"]
    assert (
        speed["images"] == len(FIXED)
        and speed["latency_p50_ms"] > 0
        and speed["transport"] in ("grpc", "shm")
    )
    assert "NaN" not in json.dumps(report) and "Infinity" not in json.dumps(report)
