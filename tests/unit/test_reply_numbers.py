"""Pure checks of a reply: the outputs it must carry (OutputCheck), and the numbers no model
should give (NaN, infinities, inverted boxes, negative class ids) dropped and counted in every
output format, so no record ever holds them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.inference.decoding.letterbox import IdentityTransform
from app.inference.profiles.output_check import OutputCheck, OutputError, describe_arrays
from app.inference.profiles.postprocess import decode_outputs
from app.inference.profiles.profile import ModelProfile, preprocess
from app.inference.result import ErrorKind, InferenceResult, Status, record_line, strict_json
from tests.strict_json import strict_loads

INF, NAN = float("inf"), float("nan")


def profile(**kw: object) -> ModelProfile:
    base: dict[str, object] = dict(
        input_name="image", input_layout="NHWC", input_dtype="UINT8", input_size=None,
        has_batch_dim=True, preprocess="raw", output_format="efficientnms",
        output_names=("n", "b", "s", "c"), labels=("face", "hand"),
    )  # fmt: skip
    return ModelProfile(**{**base, **kw})  # type: ignore[arg-type]


def transform_for(p: ModelProfile, w: int = 200, h: int = 100) -> IdentityTransform:
    _, t = preprocess(np.zeros((h, w, 3), np.uint8), p)
    assert isinstance(t, IdentityTransform)
    return t


def efficientnms(rows: list[tuple[list[float], float, float]], classes_dtype: type = np.int32) -> dict:
    k = 10
    boxes, scores, classes = np.zeros((1, k, 4), np.float32), np.zeros((1, k), np.float32), np.zeros((1, k))
    for i, (box, score, cls) in enumerate(rows):
        boxes[0, i], scores[0, i], classes[0, i] = box, score, cls
    return {
        "n": np.array([[len(rows)]], np.int32),
        "b": boxes,
        "s": scores,
        "c": classes.astype(classes_dtype),
    }


def test_efficientnms_rows_with_numbers_no_model_should_give_are_dropped_and_counted() -> None:
    p = profile()
    good = ([10, 20, 50, 60], 0.9, 0)
    rows = [
        good,
        ([INF, 0, 10, 10], 0.9, 0),
        ([-INF, -INF, INF, INF], 0.9, 0),  # clipped, it would have been the whole image
        ([0, NAN, 10, 10], 0.9, 0),
        ([50, 50, 10, 10], 0.9, 0),  # inverted
        ([1, 1, 5, 5], NAN, 0),  # no threshold compares with NaN: left out, but counted
        ([1, 1, 5, 5], INF, 0),
        ([1, 1, 5, 5], 0.8, -7),  # no class
        ([1, 1, 5, 5], 0.7, 9),  # past the labels: kept, named "class 9"
    ]
    decoded = decode_outputs(efficientnms(rows), p, transform_for(p))
    assert [(d.box, d.label) for d in decoded.detections] == [
        ((10, 20, 50, 60), "face"),
        ((1, 1, 5, 5), "class 9"),
    ]
    assert decoded.dropped_invalid == 7


def test_float_class_ids_that_are_not_numbers_are_dropped_without_a_cast_warning() -> None:
    p = profile()
    rows = [([10, 20, 50, 60], 0.9, 1.0), ([1, 1, 5, 5], 0.9, NAN), ([1, 1, 5, 5], 0.9, 1e30)]
    decoded = decode_outputs(efficientnms(rows, np.float32), p, transform_for(p))  # warnings are errors
    assert [d.class_id for d in decoded.detections] == [1] and decoded.dropped_invalid == 2


def test_tfod_and_raw_yolo_outputs_drop_non_finite_boxes() -> None:
    tfod = profile(output_format="tfod", output_names=("n", "b", "s", "c"), boxes_in="normalized", labels=())
    boxes = np.zeros((1, 3, 4), np.float32)
    boxes[0, 0], boxes[0, 1], boxes[0, 2] = [0.1, 0.1, 0.5, 0.5], [0, 0, INF, 1], [0.5, 0.5, 0.1, 0.1]
    outs = {
        "n": np.array([3.0], np.float32), "b": boxes,
        "s": np.array([[0.9, 0.9, 0.9]], np.float32), "c": np.array([[1.0, 1.0, 1.0]], np.float32),
    }  # fmt: skip
    decoded = decode_outputs(outs, tfod, transform_for(tfod))
    assert len(decoded.detections) == 1 and decoded.dropped_invalid == 2
    assert decoded.detections[0].box == pytest.approx((20, 10, 100, 50))

    yolo = profile(output_format="yolov8", output_names=("o",), labels=("a", "b"))
    out = np.zeros((1, 6, 100), np.float32)
    out[0, :4, 0], out[0, 4, 0] = (50, 50, 20, 20), 0.9
    out[0, :4, 1], out[0, 5, 1] = (INF, 50, 20, 20), 0.9
    out[0, :4, 2], out[0, 5, 2] = (150, 50, 20, 20), INF
    decoded = decode_outputs({"o": out}, yolo, transform_for(yolo))
    assert [d.box for d in decoded.detections] == [(40, 40, 60, 60)] and decoded.dropped_invalid == 2


def test_a_classifier_never_reports_a_nan_class() -> None:
    p = profile(
        task="classify",
        output_format="classify",
        output_names=("scores",),
        labels=("a", "b", "c", "d"),
        logits=True,
    )
    logits = np.array([[2.0, NAN, 1.0, INF]], np.float32)
    decoded = decode_outputs({"scores": logits}, p, transform_for(p))
    assert decoded.classes is not None and [c.label for c in decoded.classes] == ["a", "c"]
    assert all(np.isfinite(c.score) for c in decoded.classes) and decoded.dropped_invalid == 2


def test_the_record_says_how_many_were_dropped_and_writers_refuse_nan() -> None:
    result = InferenceResult("r", Status.OK, dropped_invalid=3)
    assert strict_loads(record_line(result.to_record()))["dropped_invalid"] == 3
    assert "dropped_invalid" not in InferenceResult("r", Status.OK).to_record()
    with pytest.raises(ValueError):  # a regression fails loudly, never writes NaN
        record_line({"score": NAN})
    assert strict_loads(strict_json({"mean": NAN, "n": np.int64(2)})) == {"mean": None, "n": 2}
    with pytest.raises(ValueError, match="strict"):
        strict_loads(json.dumps({"x": INF}))


# -- OutputCheck ------------------------------------------------------------------------------------
DECLARED = [
    {"name": "n", "datatype": "INT32", "shape": ["-1", "1"]},
    {"name": "b", "datatype": "FP32", "shape": ["-1", "10", "4"]},
    {"name": "s", "datatype": "FP32", "shape": ["-1", "10"]},
    {"name": "c", "datatype": "INT32", "shape": ["-1", "10"]},
]


def right(batch: int = 1) -> dict[str, np.ndarray]:
    return {
        "n": np.zeros((batch, 1), np.int32),
        "b": np.zeros((batch, 10, 4), np.float32),
        "s": np.zeros((batch, 10), np.float32),
        "c": np.zeros((batch, 10), np.int32),
    }


def test_output_check_names_what_is_wrong() -> None:
    check = OutputCheck.of(profile(), DECLARED, max_batch_size=8, max_bytes=2**20)
    check.check(describe_arrays(right()), 1)
    check.check(describe_arrays(right(3)), 3)
    cases = [
        ({k: v for k, v in right().items() if k != "b"}, 1, "no output 'b'"),
        ({**right(), "s": np.zeros((1, 10), np.float64)}, 1, "output 's' is FP64; the model declares FP32"),
        ({**right(), "b": np.zeros((1, 5, 4), np.float32)}, 1, r"output 'b' has shape \[1, 5, 4\]"),
        (right(2), 1, r"output 'n' has shape \[2, 1\]; the model declares \[1, 1\]"),  # not this batch
        ({**right(), "b": None}, 1, "no output 'b'"),  # tritonclient's as_numpy for one not there
    ]
    for arrays, batch, message in cases:
        with pytest.raises(OutputError, match=message) as caught:
            check.check(describe_arrays(arrays), batch)
        assert caught.value.kind is ErrorKind.SERVER


def test_output_check_refuses_a_reply_over_the_limit_from_its_declared_shapes() -> None:
    dynamic = [{**DECLARED[0], "shape": ["-1", "-1"]}, *DECLARED[1:]]  # n: any length
    check = OutputCheck.of(profile(), dynamic, max_batch_size=8, max_bytes=100_000)
    declared = {**describe_arrays(right()), "n": ("INT32", (1, 1_000_000))}  # 4 MB, never read
    with pytest.raises(OutputError, match=r"too large: 4\.0 MB \('n' \[1, 1000000\]\); at most 0\.1 MB") as e:
        check.check(declared, 1)
    assert e.value.kind is ErrorKind.TOO_LARGE
