"""SCRFD face detectors in the layout insightface's exports have, and insightface's own
`SCRFD.detect` on the photos; run by the product's python with onnx on PYTHONPATH
(tests/reference/insightface_reference.py), never imported.

    python scrfd_runner.py OUT_DIR SCRFD_PY PHOTO...

SCRFD_PY is `insightface/model_zoo/scrfd.py` as the insightface 0.7.3 sdist publishes it,
loaded from its file, not through the package (whose __init__ imports compiled code the
detector does not use).

Two files, small networks with seeded random weights (no download; the layout is what is
checked), input [1, 3, 320, 320], outputs without a batch axis as insightface's released
models have them, per stride 8, 16, 32 and two anchors per cell, cell by cell:
- `scrfd_kps`: 9 outputs named by number (as `scrfd_10g_bnkps.onnx`'s "448", "471", ...),
  scores [cells * 2, 1], box distances [cells * 2, 4], 5 keypoints [cells * 2, 10];
- `scrfd_named`: 6 outputs named `score_8` ... `bbox_32` (as insightface's scrfd2onnx.py
  names them), no keypoints.
OUT_DIR/NAME/model.onnx and OUT_DIR/predictions.json: per model and photo, `detect(img)`
with its defaults (`det_thresh` 0.5, NMS at `nms_thresh` 0.4): boxes x1, y1, x2, y2 and
scores in the photo's pixels, keypoints (n, 5, 2) or null.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZE = 320
STRIDES = (8, 16, 32)
ANCHORS = 2
FEATURES = 8


def build(keypoints: bool, numbered: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(7 if keypoints else 11)
    kinds = [("score", 1), ("bbox", 4)] + ([("kps", 10)] if keypoints else [])
    order = [(kind, s) for kind, _ in kinds for s in STRIDES]  # SCRFD's order of outputs
    # A traced PyTorch export names its outputs by number (448, 471, ...), scrfd2onnx.py by kind.
    names = {key: (str(448 + i) if numbered else f"{key[0]}_{key[1]}") for i, key in enumerate(order)}
    nodes: list[onnx.NodeProto] = []
    weights: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray, dtype: type = np.float32) -> str:
        weights.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def conv(src: str, dst: str, cin: int, cout: int, k: int, bias: float = 0.0, gain: float = 1.0) -> str:
        w = const(dst + "_w", rng.normal(0, gain / np.sqrt(cin * k * k), (cout, cin, k, k)))
        b = const(dst + "_b", np.full(cout, bias) + rng.normal(0, 0.1, cout))
        return node("Conv", [src, w, b], dst, pads=[k // 2] * 4)

    def flat(src: str, key: tuple[str, int], width: int) -> None:  # [1, A*c, h, w] -> [h*w*A, c]
        t = node("Transpose", [src], src + "_t", perm=[0, 2, 3, 1])
        node("Reshape", [t, const(src + "_shape", [-1, width], np.int64)], names[key])

    for s in STRIDES:
        pooled = node("AveragePool", ["input.1"], f"p{s}", kernel_shape=[s, s], strides=[s, s])
        features = node("Tanh", [conv(pooled, f"c{s}", 3, FEATURES, 3, gain=2.0)], f"f{s}")
        # Scores: most anchors below 0.5, a few dozen above, clustered where the picture is alike.
        logits = conv(features, f"sl{s}", FEATURES, ANCHORS, 1, bias=-1.6, gain=2.5)
        flat(node("Sigmoid", [logits], f"sg{s}"), ("score", s), 1)
        # Distances left, top, right, bottom, in strides: 0.5 to 4.5.
        unit = node("Sigmoid", [conv(features, f"bl{s}", FEATURES, ANCHORS * 4, 1)], f"bs{s}")
        scaled = node("Mul", [unit, const(f"b4{s}", 4.0)], f"bm{s}")
        flat(node("Add", [scaled, const(f"bh{s}", 0.5)], f"ba{s}"), ("bbox", s), 4)
        if keypoints:  # 5 points, offsets from the cell centre in strides: -3 to 3
            unit = node("Tanh", [conv(features, f"kl{s}", FEATURES, ANCHORS * 10, 1)], f"kt{s}")
            flat(node("Mul", [unit, const(f"k3{s}", 3.0)], f"km{s}"), ("kps", s), 10)
    widths = dict(kinds)
    graph = helper.make_graph(
        nodes,
        "scrfd",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [
            helper.make_tensor_value_info(
                names[(kind, s)], TensorProto.FLOAT, [(SIZE // s) ** 2 * ANCHORS, widths[kind]]
            )
            for kind, s in order
        ],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def load_scrfd(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("insightface_scrfd", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SCRFD


def main() -> None:
    out, scrfd_py, photos = Path(sys.argv[1]), Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
    SCRFD = load_scrfd(scrfd_py)
    predictions: dict[str, dict[str, Any]] = {}
    for name, keypoints, numbered in (("scrfd_kps", True, True), ("scrfd_named", False, False)):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(build(keypoints, numbered), str(folder / "model.onnx"))
        detector = SCRFD(model_file=str(folder / "model.onnx"))
        # The CPU; its defaults said out loud; the input size is the file's own.
        detector.prepare(-1, det_thresh=0.5, nms_thresh=0.4)
        predictions[name] = {}
        for photo in photos:
            det, kpss = detector.detect(cv2.imread(str(photo)))
            predictions[name][photo.name] = {
                "boxes": det[:, :4].tolist(),
                "scores": det[:, 4].tolist(),
                "keypoints": None if kpss is None else kpss.tolist(),
            }
    (out / "predictions.json").write_text(json.dumps(predictions))


if __name__ == "__main__":
    main()
