"""The perf_analyzer --input-data export: the exact tensors sent, round-tripped."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from app.inference.tracing.perf_analyzer import (
    InputDataError,
    input_data,
    read_input_data,
    replay_command,
    write_input_data,
)
from tests.strict_json import strict_loads


def test_batched_requests_become_one_entry_per_image_of_its_own_shape(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    sent = [
        {"image": rng.integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)},  # a client batch of 2
        {"image": rng.integers(0, 256, (1, 30, 20, 3), dtype=np.uint8)},  # another size
    ]
    out = tmp_path / "input.json"
    assert write_input_data(out, sent, {"image": "UINT8"}, batched=True) == 3
    document = strict_loads(out.read_text())
    assert [e["image"]["shape"] for e in document["data"]] == [[48, 64, 3], [48, 64, 3], [30, 20, 3]]
    back = read_input_data(document, {"image": "UINT8"})
    expected = [sent[0]["image"][0], sent[0]["image"][1], sent[1]["image"][0]]
    for entry, image in zip(back, expected, strict=True):
        np.testing.assert_array_equal(entry["image"], image)


@pytest.mark.parametrize("datatype", ["FP32", "FP16", "INT64", "BOOL"])
def test_an_unbatched_model_gets_its_whole_tensor_exactly(datatype: str) -> None:
    from tritonclient.utils import triton_to_np_dtype

    tensor = (np.arange(24).reshape(1, 2, 3, 4) / 7).astype(triton_to_np_dtype(datatype))
    document = json.loads(json.dumps(input_data([{"x": tensor}], {"x": datatype}, batched=False)))
    (entry,) = read_input_data(document, {"x": datatype})
    assert entry["x"].shape == (1, 2, 3, 4) and entry["x"].dtype == tensor.dtype
    np.testing.assert_array_equal(entry["x"], tensor)


def test_bytes_tensors_and_several_inputs() -> None:
    sent = [
        {"text": np.array([[b"a cat"], [b"\x00\xff"]], dtype=np.object_), "n": np.array([[1], [2]], np.int32)}
    ]
    types = {"text": "BYTES", "n": "INT32"}
    back = read_input_data(json.loads(json.dumps(input_data(sent, types, batched=True))), types)
    assert [e["text"].tolist() for e in back] == [[b"a cat"], [b"\x00\xff"]]
    assert [e["n"].tolist() for e in back] == [[1], [2]]


def test_a_request_without_an_input_or_with_uneven_batches_is_named() -> None:
    with pytest.raises(InputDataError, match="request 2 has no tensor for input image"):
        input_data([{"image": np.zeros((1, 2, 2, 3), np.uint8)}, {}], {"image": "UINT8"}, batched=True)
    with pytest.raises(InputDataError, match=r"request 1: its inputs have different batch sizes \[1, 2\]"):
        input_data([{"a": np.zeros((1, 2)), "b": np.zeros((2, 2))}], {"a": "FP64", "b": "FP64"}, batched=True)


def test_the_replay_command_line() -> None:
    command = replay_command(
        model="face detector",
        url="127.0.0.1:8001",
        protocol="GRPC",
        input_file="/tmp/in put.json",
        batch=4,
        concurrency=2,
        version="2",
        shared_memory=True,
    )
    assert shlex.split(command) == [
        "perf_analyzer",
        "-m",
        "face detector",
        "-x",
        "2",
        "-u",
        "127.0.0.1:8001",
        "-i",
        "grpc",
        "--input-data",
        "/tmp/in put.json",
        "-b",
        "4",
        "--concurrency-range",
        "2",
        "--shared-memory",
        "system",
    ]


def test_the_datatypes_come_from_the_arrays_when_not_given() -> None:
    sent = {"image": np.full((1, 4, 5, 3), 7, np.uint8), "scale": np.array([[0.5]], np.float16)}
    document = json.loads(json.dumps(input_data([sent], batched=True)))
    (entry,) = read_input_data(document, {"image": "UINT8", "scale": "FP16"})
    np.testing.assert_array_equal(entry["image"], sent["image"][0])
    assert entry["scale"].dtype == np.float16 and entry["scale"].tolist() == [0.5]
