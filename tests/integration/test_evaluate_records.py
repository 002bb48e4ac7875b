"""`evaluate`'s figures are exactly those pycocotools computes from its own `--records`: the
records carry the scores (and boxes) the evaluation used, unrounded. The `misbehaving` test
model in mode 7 scores each image 0.9497 + (green - 128) / 100000: a true and a false detection
of two images 3e-5 apart, which 4 decimals tied (and pycocotools then ranked the false one
first, halving the AP the report gave)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.server.embedded import EmbeddedServer
from tests.evaluation_data import Img, Obj, reference, reference_metrics, write_dataset
from tests.integration.test_cli_infer import run_cli
from tests.strict_json import strict_loads

FINE_SCORES = 7  # the misbehaving model's mode (tests/models/README.md)


def _image(name: str, green: int, objects: list[Obj]) -> Img:
    pixels = np.full((64, 64, 3), 90, np.uint8)
    pixels[0, 0] = (0, green, FINE_SCORES)  # BGR: red is the mode, green the score's last digits
    return Img(name, 64, 64, objects, pixels)


# The model finds the middle half [16, 16, 48, 48] of each image, class "face".
IMAGES = [
    # First in id order: its detection is false (the face is elsewhere), scored 0.94967.
    _image("a_false.png", 125, [Obj("face", (0, 0, 12, 12))]),
    # Its detection is right, scored 0.94971: ranked first by evaluate.
    _image("b_true.png", 129, [Obj("face", (16, 16, 48, 48))]),
]


@pytest.mark.parametrize("fmt", ["coco", "yolo"])
def test_the_figures_are_exactly_those_of_the_records(
    triton: EmbeddedServer, tmp_path: Path, fmt: str
) -> None:
    dataset, extra = write_dataset(fmt, tmp_path / "data", IMAGES, ["face"])
    out, records_file = tmp_path / "report.json", tmp_path / "records.jsonl"
    done = run_cli(
        "evaluate", "--url", triton.grpc_url, "--model", "misbehaving", str(dataset),
        "--output", str(out), "--records", str(records_file), *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = strict_loads(out.read_text(encoding="utf-8"))
    records = [json.loads(line) for line in records_file.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if "source" in r]
    scores = {Path(r["source"]).name: [d["score"] for d in r["detections"]] for r in records}
    # The model's float32 scores, every bit of them (4 decimals made both 0.9497).
    (false_score,), (true_score,) = scores["a_false.png"], scores["b_true.png"]
    assert false_score == float(np.float32(false_score)) and true_score == float(np.float32(true_score))
    assert false_score == pytest.approx(0.94967, abs=1e-7) and true_score == pytest.approx(0.94971, abs=1e-7)
    expected = reference_metrics(reference(IMAGES, ["face"], records))
    # Exactly (the report rounds to 6 decimals), and the true detection ranked first: AP 0.5 at
    # IoU 0.5 (one of the two faces found, at precision 1), not 0.25.
    assert report["metrics"] == {k: (None if v is None else round(v, 6)) for k, v in expected.items()} | {
        k: v for k, v in report["metrics"].items() if k not in expected
    }
    assert report["metrics"]["map50"] == round(51 / 101, 6)
