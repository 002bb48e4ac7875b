"""Writes the small ONNX files the model-file tests serve (committed; run again only to change
them): needs the `onnx` package, e.g. the Ultralytics reference venv's python
(`$(make -s ultralytics) tests/model_files/make_models.py`).

- tiny_detector.onnx: a YOLOv8-style raw detector ([batch, 4 + 2, anchors], dynamic batch,
  height and width), exported for 64x64 with Ultralytics-style metadata_props (names, imgsz,
  stride, task). Its weights are seeded random: a strided conv over the image, boxes
  (cx, cy, w, h) scaled into the image, two class scores through a sigmoid. What it finds does
  not matter, only that every way of serving it gives the same records.
- unsupported_op.onnx: a valid file whose one node is an operator no runtime implements.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
SIZE = 64
NAMES = {0: "blob", 1: "edge"}


def tiny_detector() -> onnx.ModelProto:
    rng = np.random.default_rng(29)
    weight = rng.normal(0, 0.05, (6, 3, 8, 8)).astype(np.float32)
    bias = np.array([0, 0, 0, 0, -1.0, -1.0], dtype=np.float32)
    scale = np.array([SIZE, SIZE, SIZE / 2, SIZE / 2, 1, 1], dtype=np.float32).reshape(1, 6, 1)
    nodes = [
        helper.make_node("Conv", ["images", "w", "b"], ["conv"], kernel_shape=[8, 8], strides=[8, 8]),
        helper.make_node("Reshape", ["conv", "shape"], ["flat"]),
        helper.make_node("Sigmoid", ["flat"], ["unit"]),
        helper.make_node("Mul", ["unit", "scale"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, ["batch", 6, "anchors"])],
        initializer=[
            numpy_helper.from_array(weight, "w"),
            numpy_helper.from_array(bias, "b"),
            numpy_helper.from_array(np.array([0, 6, -1], dtype=np.int64), "shape"),
            numpy_helper.from_array(scale, "scale"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    metadata = {"names": str(NAMES), "imgsz": str([SIZE, SIZE]), "stride": "8", "task": "detect"}
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    return model


def unsupported_op() -> onnx.ModelProto:
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example.missing")
    graph = helper.make_graph(
        [node],
        "unsupported_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example.missing", 1)]
    )
    model.ir_version = 8
    return model


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    onnx.save(tiny_detector(), out / "tiny_detector.onnx")
    onnx.save(unsupported_op(), out / "unsupported_op.onnx")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
