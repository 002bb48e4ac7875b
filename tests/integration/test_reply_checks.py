"""Every reply is checked the same way whatever the transport: an output left out, of another
datatype or shape, or too large fails the request naming the output; never decoded from the
previous request's bytes (a reused shared-memory region) and reported ok.

The `misbehaving` test model (tests/models) answers by the first pixel's red value: 0 right
(the middle half of the image), 1 without det_boxes, 2 det_scores as FP64, 3 det_boxes
[B, 50, 4], 6 det_boxes of 4.8 MB.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.inference.core.open_session import open_session
from app.inference.core.spec import Delivery, SessionSpec
from app.inference.protocol import parse_endpoints
from app.inference.result import ErrorKind, Status
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from app.server.embedded import EmbeddedServer
from tests.integration.test_cli_infer import parse, run_cli
from tests.strict_json import strict_loads

GOOD, MISSING_BOXES, WRONG_DTYPE, WRONG_SHAPE, HUGE = 0, 1, 2, 3, 6
W, H = 160, 120
MIDDLE = [W / 4, H / 4, 3 * W / 4, 3 * H / 4]


def image_for(mode: int) -> np.ndarray:
    image = np.full((H, W, 3), 128, np.uint8)
    image[0, 0] = (mode, 0, 0)  # RGB: the model reads the red value
    return image


@pytest.fixture(scope="module")
def mode_files(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("modes")
    files = {}
    for mode in (GOOD, MISSING_BOXES, WRONG_DTYPE, WRONG_SHAPE):
        files[mode] = folder / f"mode{mode}.png"
        cv2.imwrite(str(files[mode]), cv2.cvtColor(image_for(mode), cv2.COLOR_RGB2BGR))
    return files


@pytest.mark.parametrize("transport", ["grpc", "shm", "auto"])
def test_a_wrong_reply_fails_naming_the_output_on_every_transport(
    triton: EmbeddedServer, mode_files: dict[int, Path], transport: str
) -> None:
    # One request at a time, a right answer before each wrong one: a reused output region
    # holds the right answer's boxes when the wrong reply comes back.
    order = [GOOD, MISSING_BOXES, GOOD, WRONG_DTYPE, GOOD, WRONG_SHAPE, GOOD]
    paths = [str(mode_files[m]) for m in order]
    run = run_cli(
        "infer", "--url", triton.grpc_url, "--model", "misbehaving", "--transport", transport,
        "--concurrency", "1", *paths,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    records, summary = parse(run.stdout)
    # Records come as they end (the one asked again ends after the next image): each is
    # paired with its mode by its source.
    assert sorted(r["source"] for r in records) == sorted(paths)
    mode_of = {str(path): mode for mode, path in mode_files.items()}
    assert summary["ok"] == 4 and summary["failed"] == 3
    # A reply leaving outputs out (a server crashing mid-answer sends those) is asked once
    # more before it fails; a wrong datatype or shape is not.
    assert summary["retried"] == 1
    named = {MISSING_BOXES: "det_boxes", WRONG_DTYPE: "det_scores", WRONG_SHAPE: "det_boxes"}
    for record in records:
        mode = mode_of[record["source"]]
        if mode == GOOD:
            assert record["status"] == "ok", record
            assert [d["box"] for d in record["detections"]] == [MIDDLE]
            continue
        assert record["status"] == "failed" and not record["ok"], record
        assert record["detections"] == []
        assert f"'{named[mode]}'" in record["error"], record["error"]
        assert record["error_kind"] == "server"


def test_an_output_over_the_limit_is_refused_before_it_is_read(triton: EmbeddedServer) -> None:
    limit = 2**20  # 4.8 MB of det_boxes is over it; the right answer (2.4 KB) is not
    spec = SessionSpec(
        endpoints=parse_endpoints(triton.grpc_url),
        model="misbehaving",
        connection=ConnectionOptions(max_output_bytes=limit),
        delivery=Delivery(TransportKind.GRPC),
    )
    with open_session(spec) as session:
        huge = session.infer(image_for(HUGE))
        good = session.infer(image_for(GOOD))
    assert huge.status is Status.FAILED and huge.error_kind is ErrorKind.TOO_LARGE
    assert huge.detections == []
    assert huge.error is not None and "too large" in huge.error and "1.0 MB of outputs" in huge.error
    assert good.status is Status.OK and [list(d.box) for d in good.detections] == [MIDDLE]


# -- numbers no model should give (mode 4: NaN/inf/inverted boxes and scores; mode 5: class ids
# 5 and -7 with labels "face,hand") ---------------------------------------------------------------
NON_FINITE, CLASS_IDS = 4, 5


@pytest.fixture(scope="module")
def odd_numbers(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("odd_numbers")
    files = {}
    for mode in (NON_FINITE, CLASS_IDS):
        files[mode] = folder / f"mode{mode}.png"
        cv2.imwrite(str(files[mode]), cv2.cvtColor(image_for(mode), cv2.COLOR_RGB2BGR))
    return files


@pytest.mark.parametrize("transport", ["grpc", "shm"])
def test_non_finite_numbers_never_reach_a_record(
    triton: EmbeddedServer, odd_numbers: dict[int, Path], transport: str
) -> None:
    run = run_cli(
        "infer", "--url", triton.grpc_url, "--model", "misbehaving", "--transport", transport,
        str(odd_numbers[NON_FINITE]), str(odd_numbers[CLASS_IDS]),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = [strict_loads(line) for line in run.stdout.splitlines()]  # NaN/Infinity refused
    non_finite, class_ids = lines[:2]
    # Six rows with inf/NaN coordinates or scores, or inverted: dropped (none became a
    # full-image box by clipping), counted; the one right box stays.
    assert non_finite["status"] == "ok"
    assert [d["box"] for d in non_finite["detections"]] == [MIDDLE]
    assert non_finite["dropped_invalid"] == 6
    # Class 5 is past the two labels: named "class 5"; class -7 is no class: dropped, counted.
    assert [(d["class_id"], d["label"]) for d in class_ids["detections"]] == [(0, "face"), (5, "class 5")]
    assert class_ids["dropped_invalid"] == 1
    assert "dropped_invalid" not in lines[2]["summary"]


def test_compare_and_evaluate_write_strict_json_with_non_finite_answers(
    triton: EmbeddedServer, odd_numbers: dict[int, Path], tmp_path: Path
) -> None:
    compared = run_cli(
        "compare", "--url", triton.grpc_url, "--model", "misbehaving", "--model", "misbehaving",
        str(odd_numbers[NON_FINITE]),
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    pair, summary = (strict_loads(line) for line in compared.stdout.splitlines())
    assert pair["a"]["dropped_invalid"] == pair["b"]["dropped_invalid"] == 6
    assert pair["matched"] and pair["matched"][0][2] == 1.0 and "summary" in summary

    # A labelme dataset of one such image, its object where the model's right box is.
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    cv2.imwrite(str(dataset / "a.png"), cv2.cvtColor(image_for(NON_FINITE), cv2.COLOR_RGB2BGR))
    shape = {"label": "face", "points": [MIDDLE[:2], MIDDLE[2:]], "group_id": None,
             "shape_type": "rectangle", "flags": {}}  # fmt: skip
    doc = {"version": "5.5.0", "flags": {}, "shapes": [shape], "imagePath": "a.png", "imageData": None,
           "imageHeight": H, "imageWidth": W}  # fmt: skip
    (dataset / "a.json").write_text(json.dumps(doc), encoding="utf-8")
    report_path, records_path = tmp_path / "report.json", tmp_path / "records.jsonl"
    evaluated = run_cli(
        "evaluate", "--url", triton.grpc_url, "--model", "misbehaving", str(dataset),
        "--output", str(report_path), "--records", str(records_path),
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    report = strict_loads(report_path.read_text(encoding="utf-8"))
    (record,) = [strict_loads(line) for line in records_path.read_text(encoding="utf-8").splitlines()]
    assert record["dropped_invalid"] == 6 and record["status"] == "ok"
    assert report["metrics"]["map50"] == pytest.approx(1.0)
