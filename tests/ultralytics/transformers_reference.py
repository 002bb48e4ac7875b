"""Run in the reference venv (it has torch and transformers): two DETR-family detectors of
Hugging Face transformers exported to ONNX, and transformers' own post-processing of their
outputs on the photos.

    python transformers_reference.py OUT_DIR PHOTO...

- `detr`: DETR (softmax over the classes plus a last "no object"), ImageNet-normalised input;
- `rtdetr`: RT-DETR (sigmoid per class, top 300 over queries x classes), input 0..1.
Small configurations with random weights (seeded, no download), input 320x320, exported with
`torch.onnx.export` as `images` -> `pred_boxes` (normalised cx, cy, w, h) and `logits`, the
outputs transformers' own ONNX configurations name. OUT_DIR/NAME/model.onnx and
OUT_DIR/predictions.json: per model and photo, what the model's image processor and its
`post_process_object_detection(threshold=0, target_sizes=[(h, w)])` give (boxes x1, y1, x2,
y2 in the photo's pixels, labels, scores) on the torch model's outputs ("torch") and on the
exported file's, run by onnxruntime ("onnxruntime"): the trace can pick other queries than
torch where random weights give near-equal scores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import onnxruntime
import torch
from PIL import Image
from transformers import (
    DetrConfig,
    DetrForObjectDetection,
    DetrImageProcessor,
    ResNetConfig,
    RTDetrConfig,
    RTDetrForObjectDetection,
    RTDetrImageProcessor,
)

SIZE = 320
CLASSES = 3


def models() -> dict[str, tuple[torch.nn.Module, object]]:
    torch.manual_seed(0)
    backbone = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                            out_features=["stage4"])  # fmt: skip
    detr = DetrConfig(
        num_labels=CLASSES, use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
        backbone_config=backbone, d_model=64, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=128,
        decoder_ffn_dim=128, encoder_attention_heads=2, decoder_attention_heads=2, num_queries=100,
    )  # fmt: skip
    rtdetr = RTDetrConfig(
        num_labels=CLASSES, use_pretrained_backbone=False, decoder_layers=1, encoder_layers=1
    )
    size = {"height": SIZE, "width": SIZE}
    return {
        "detr": (DetrForObjectDetection(detr).eval(), DetrImageProcessor(size=size, do_pad=False)),
        "rtdetr": (RTDetrForObjectDetection(rtdetr).eval(), RTDetrImageProcessor(size=size)),
    }


class Outputs(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        found = self.model(pixel_values=images)
        return found.pred_boxes, found.logits


def pixels(processor: Any, image: Image.Image) -> torch.Tensor:
    return processor(images=image, return_tensors="pt")["pixel_values"]


def processed(processor: Any, found: Any, image: Image.Image) -> dict[str, list]:
    """transformers' own post-processing: every query's detection (threshold 0)."""
    (result,) = processor.post_process_object_detection(
        found, threshold=0.0, target_sizes=[(image.height, image.width)]
    )
    return {k: v.tolist() for k, v in result.items()}


def main() -> None:
    out, photos = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    predictions: dict[str, dict[str, dict[str, dict[str, list]]]] = {}
    for name, (model, processor) in models().items():
        # Predictions before the export: torch.onnx.export leaves RT-DETR's module changed
        # (measured: its top score 0.46 before, 0.84 after), while the file it writes gives
        # what the model gave before.
        inputs = {photo.name: Image.open(photo).convert("RGB") for photo in photos}
        with torch.no_grad():
            found = {n: model(pixel_values=pixels(processor, i)) for n, i in inputs.items()}
        (out / name).mkdir()
        example = torch.rand(1, 3, SIZE, SIZE)
        torch.onnx.export(
            Outputs(model), (example,), str(out / name / "model.onnx"), opset_version=17,
            input_names=["images"], output_names=["pred_boxes", "logits"], dynamo=False,
        )  # fmt: skip
        session = onnxruntime.InferenceSession(str(out / name / "model.onnx"))
        predictions[name] = {}
        for photo, image in inputs.items():
            boxes, logits = session.run(None, {"images": pixels(processor, image).numpy()})
            ran = SimpleNamespace(pred_boxes=torch.from_numpy(boxes), logits=torch.from_numpy(logits))
            predictions[name][photo] = {
                "torch": processed(processor, found[photo], image),
                "onnxruntime": processed(processor, ran, image),
            }
    (out / "predictions.json").write_text(json.dumps(predictions))


if __name__ == "__main__":
    main()
