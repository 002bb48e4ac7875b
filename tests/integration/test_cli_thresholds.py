"""--score and --iou (Ultralytics' conf and iou) on infer, compare, evaluate and bench: they
override the profile's thresholds, and a value outside 0..1 is a usage error naming the option.

fixed_yolov5 answers three candidates (tests/models/README.md): class 0 at 0.875, the same
box 4 px to the right at 0.75 (IoU 0.96 with it: NMS drops it at the default IoU 0.45), and
class 2 at 0.75."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
import skimage.data

from app.server.embedded import EmbeddedServer
from tests.evaluation_data import write_dataset
from tests.integration.test_cli_evaluate import CLASSES, FIXED, evaluate
from tests.integration.test_cli_infer import bgr, parse, run_cli
from tests.strict_json import strict_loads


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("thresholds") / "astronaut.png"
    cv2.imwrite(str(path), bgr(skimage.data.astronaut()))
    return path


def _scores(triton: EmbeddedServer, photo: Path, *options: str) -> list[float]:
    done = run_cli("infer", "--url", triton.grpc_url, "--model", "fixed_yolov5", *options, str(photo))
    assert done.returncode == 0, done.stderr[-2000:]
    (record,), _summary = parse(done.stdout)
    return sorted((d["score"] for d in record["detections"]), reverse=True)


def test_infer_score_and_iou_override_the_profile(triton: EmbeddedServer, photo: Path) -> None:
    assert _scores(triton, photo) == [0.875, 0.75]
    assert _scores(triton, photo, "--score", "0.8") == [0.875]
    # Above the two boxes' IoU of 0.96 NMS keeps both of class 0.
    assert _scores(triton, photo, "--iou", "0.97") == [0.875, 0.75, 0.75]
    assert _scores(triton, photo, "--iou", "0.97", "--score", "0.76") == [0.875]


def test_compare_applies_them_to_both_models(triton: EmbeddedServer, photo: Path) -> None:
    done = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "fixed_yolov5", "--score", "0.8", str(photo)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (record,), summary = parse(done.stdout)
    assert [d["score"] for d in record["a"]["detections"]] == [0.875]
    assert [d["score"] for d in record["b"]["detections"]] == [0.875]
    assert summary["iou_threshold"] == 0.5  # the matching IoU (--match-iou) is another option


def test_evaluate_scores_what_the_threshold_leaves(triton: EmbeddedServer, tmp_path: Path) -> None:
    """fixed_versions finds a face at 0.9 and a car at 0.8 on every image: above --score 0.85
    only the face is left to be evaluated."""
    dataset, extra = write_dataset("coco", tmp_path / "data", FIXED, CLASSES)
    for score, kept in ((None, {0.9, 0.8}), ("0.85", {0.9})):
        options = ["--score", score] if score else []
        records = tmp_path / f"records-{score}.jsonl"
        evaluate(
            triton, dataset, "--model", "fixed_versions", "--records", str(records), *options, *extra,
            out=tmp_path / f"report-{score}.json",
        )  # fmt: skip
        lines = [strict_loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
        found = {round(d["score"], 4) for r in lines if "detections" in r for d in r["detections"]}
        assert found == kept, score


@pytest.mark.parametrize("command", ["infer", "compare", "evaluate", "bench"])
@pytest.mark.parametrize(
    ("option", "value", "cause"),
    [("--score", "1.5", "out of range (0 to 1)"), ("--iou", "-0.1", "out of range (0 to 1)"),
     ("--iou", "high", "expected a number"), ("--score", "nan", "out of range")],
)  # fmt: skip
def test_a_bad_threshold_is_a_usage_error_naming_it(
    photo: Path, command: str, option: str, value: str, cause: str
) -> None:
    target = [str(photo)] if command != "bench" else ["--image", str(photo)]
    done = run_cli(command, "--url", "127.0.0.1:1", option, value, *target)
    assert done.returncode == 2
    assert f"argument {option}: " in done.stderr
    assert cause in done.stderr and done.stdout == ""
