"""A model file read with onnxruntime: its tensors, its metadata, the Triton config written
from them; `--model PATH` turned into the file's model name; bad files named with their cause.
The files are the committed tests/model_files/*.onnx (tests/model_files/make_models.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.commands.model_file_args import ModelFileUsageError, take_model_files
from app.inference.introspection.model_config import normalise, parse_config, to_pbtxt
from app.inference.model_files.config import Backend, labels_of, triton_config, upload_config
from app.inference.model_files.reading import ModelFileError, model_name_of, read_model_file
from app.inference.model_files.save import default_backend, save_model_folder
from app.inference.model_files.upload import MAX_UPLOAD_BYTES, check_upload_size
from app.inference.profiles.export_metadata import config_metadata

FILES = Path(__file__).resolve().parents[1] / "model_files"
TINY = FILES / "tiny_detector.onnx"


def test_an_onnx_file_gives_its_tensors_and_its_metadata() -> None:
    model = read_model_file(TINY)
    assert model.kind == "onnx" and model.file_name == "model.onnx"
    assert [(t.name, t.data_type, t.shape) for t in model.inputs] == [
        ("images", "TYPE_FP32", (None, 3, None, None))
    ]
    assert [(t.name, t.shape) for t in model.outputs] == [("output0", (None, 6, None))]
    assert model.batch_dynamic
    # metadata_props values are text; they come back as the values Ultralytics' guide writes.
    assert model.metadata["names"] == {0: "blob", 1: "edge"}
    assert model.metadata["imgsz"] == [64, 64] and model.metadata["stride"] == 8


def test_the_config_batches_on_the_dynamic_axis_and_keeps_the_metadata() -> None:
    model = read_model_file(TINY)
    config = triton_config(model, "tiny", Backend.PYTHON)
    assert config["max_batch_size"] == 8 and config["dynamic_batching"] == {}
    assert config["input"] == [{"name": "images", "data_type": "TYPE_FP32", "dims": [3, -1, -1]}]
    assert config["output"] == [{"name": "output0", "data_type": "TYPE_FP32", "dims": [6, -1]}]
    assert config["backend"] == "python" and config["instance_group"] == [{"kind": "KIND_CPU", "count": 1}]
    # Through Triton's schema and config.pbtxt text and back: the profile reads it as it
    # reads a hand-deployed Ultralytics model's.
    again = parse_config(to_pbtxt(config))
    metadata = config_metadata(again)
    assert metadata is not None and metadata.names == ("blob", "edge") and metadata.imgsz == (64, 64)
    onnx_config = triton_config(model, "tiny", Backend.ONNXRUNTIME)
    assert onnx_config["backend"] == "onnxruntime" and "instance_group" not in onnx_config
    assert normalise(upload_config(model, "tiny"))["backend"] == "onnxruntime"
    assert labels_of(model) == ["blob", "edge"]


def test_names_of_models_from_files() -> None:
    assert model_name_of("/x/yolov8n.onnx") == "yolov8n"
    assert model_name_of("my model (1).tflite") == "my_model__1_"
    assert default_backend("a.onnx") is Backend.ONNXRUNTIME and default_backend("a.tflite") is Backend.PYTHON


def test_model_paths_in_the_arguments_become_the_names_of_their_models(tmp_path: Path) -> None:
    args = argparse.Namespace(model=[str(TINY), "face_detector", str(TINY)])
    assert take_model_files(args) == (str(TINY),)
    assert args.model == ["tiny_detector", "face_detector", "tiny_detector"]
    single = argparse.Namespace(model="face_detector")
    assert take_model_files(single) == () and single.model == "face_detector"
    with pytest.raises(ModelFileUsageError, match=r"missing\.onnx: no such model file"):
        take_model_files(argparse.Namespace(model=str(tmp_path / "missing.onnx")))


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"name: not a model\n", "not an ONNX model, or truncated"),
        (TINY.read_bytes()[:700], "not an ONNX model, or truncated"),
        ((FILES / "unsupported_op.onnx").read_bytes(), "an operator onnxruntime does not know"),
    ],
    ids=["text", "truncated", "unknown-operator"],
)
def test_a_bad_file_is_named_with_its_cause(tmp_path: Path, content: bytes, cause: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    with pytest.raises(ModelFileError) as caught:
        read_model_file(bad)
    assert str(caught.value).startswith(f"model file {bad}: ") and cause in str(caught.value)


def test_a_file_too_big_for_one_load_request_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "huge.onnx"
    with open(big, "wb") as f:  # sparse: no 2 GB written
        f.truncate(MAX_UPLOAD_BYTES + 1)
    with pytest.raises(ModelFileError, match=r"huge\.onnx: 2\.1 GB is more than one load request can carry"):
        check_upload_size(big)


def test_a_saved_folder_is_whole_and_never_written_over(tmp_path: Path) -> None:
    folder = save_model_folder(TINY, tmp_path, backend=Backend.PYTHON)
    assert folder == tmp_path / "tiny_detector"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "1",
        "1/model.onnx",
        "1/model.py",
        "config.pbtxt",
        "labels.txt",
    ]
    assert (folder / "labels.txt").read_text() == "blob\nedge\n"
    assert (folder / "1" / "model.onnx").read_bytes() == TINY.read_bytes()
    config = parse_config((folder / "config.pbtxt").read_text())
    assert config["name"] == "tiny_detector" and config["max_batch_size"] == 8
    with pytest.raises(ModelFileError, match="exists already"):
        save_model_folder(TINY, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny_detector"], "no staging folder left"


def test_a_tflite_file_gives_its_tensors() -> None:
    from app.resources import model_repository

    model = read_model_file(model_repository() / "pose_detector" / "1" / "pose_detection.tflite")
    assert model.kind == "tflite" and model.file_name == "model.tflite" and not model.batch_dynamic
    assert [(t.name, t.data_type, t.shape) for t in model.inputs] == [
        ("input_1", "TYPE_FP32", (1, 224, 224, 3))
    ]
    assert [t.shape for t in model.outputs] == [(1, 2254, 12), (1, 2254, 1)]
    assert triton_config(model, "pose", Backend.PYTHON)["max_batch_size"] == 0
    with pytest.raises(ValueError, match="the onnxruntime backend runs ONNX files"):
        triton_config(model, "pose", Backend.ONNXRUNTIME)
