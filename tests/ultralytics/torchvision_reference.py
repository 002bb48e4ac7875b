"""Run in the reference venv (it has torch and torchvision): a torchvision detector exported as
torchvision documents it, and torchvision's own predictions on the photos.

    python torchvision_reference.py OUT_DIR PHOTO...

Faster R-CNN MobileNetV3-Large 320 FPN, random weights (seeded: no download), 3 classes and
background. `torch.onnx.export` with the image `[3, H, W]` and the detections' count dynamic,
as torchvision's own ONNX test exports it (its GeneralizedRCNNTransform, resize and
normalisation, inside the graph). OUT_DIR gets model.onnx and predictions.json: per photo the
boxes, labels and scores of `model([image])` on the photo as it is (RGB, 0..1), torchvision's
own prediction ("torch"), and of the exported file run by onnxruntime on the same tensor
("onnxruntime"): the traced resize of a non-square photo can differ from torch's by a pixel,
which is the export's doing, not the app's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
import torchvision
from PIL import Image


def main() -> None:
    out, photos = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    torch.manual_seed(0)
    detection = torchvision.models.detection
    model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=4
    )
    model.eval()
    example = torch.rand(3, 300, 400)
    torch.onnx.export(
        model,
        ([example],),
        str(out / "model.onnx"),
        opset_version=17,
        input_names=["images"],
        output_names=["boxes", "labels", "scores"],
        dynamic_axes={
            "images": {1: "height", 2: "width"},
            "boxes": {0: "n"},
            "labels": {0: "n"},
            "scores": {0: "n"},
        },
        dynamo=False,  # the TorchScript exporter, which torchvision's detection models are tested with
    )
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    predictions = {}
    with torch.no_grad():
        for photo in photos:
            rgb = np.asarray(Image.open(photo).convert("RGB"), np.float32) / 255.0
            tensor = torch.from_numpy(rgb).permute(2, 0, 1).contiguous()
            found = model([tensor])[0]
            boxes, labels, scores = session.run(None, {"images": tensor.numpy()})
            predictions[photo.name] = {
                "torch": {k: v.tolist() for k, v in found.items()},
                "onnxruntime": {
                    "boxes": boxes.tolist(),
                    "labels": labels.tolist(),
                    "scores": scores.tolist(),
                },
            }
    (out / "predictions.json").write_text(json.dumps(predictions))


if __name__ == "__main__":
    main()
