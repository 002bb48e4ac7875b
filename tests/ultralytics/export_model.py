"""Exports a YOLOv8n detector to ONNX the way Ultralytics' Triton guide does (dynamic axes):
runs INSIDE the Ultralytics venv (tests/ultralytics/setup_ultralytics.sh), never imported by
the product or its venv.

    python export_model.py OUT_DIR PHOTO...

Writes OUT_DIR/model.onnx and OUT_DIR/metadata.txt: `str(exporter.metadata)`, the text the
guide puts into config.pbtxt as the parameter `metadata`.

The network is built from Ultralytics' own yolov8n.yaml with random weights (no download),
seeded, with NAMES as its classes and exported at IMGSZ (not 640: a viewer that ignored the
metadata and fed 640 would not find the same boxes). Random weights alone answer the same
numbers for every image (their activations vanish layer after layer, and Ultralytics
initialises the class biases for a prior of ~0.01 %), so the network is given a data-dependent
initialisation on the PHOTOs: every BatchNorm takes the statistics of its input on them (unit
variance through the depth), then the class logits are scaled to 1/LOGIT_GAIN of their spread
with CLASS_BIAS as bias. On photos that leaves from none to hundreds of candidates of many
classes above conf 0.25, scores below 0.98 (no ties at 1.0), and NMS real work. What the boxes
mean does not matter: only that both sides decode the same outputs alike.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from ultralytics import YOLO
from ultralytics.nn.tasks import DetectionModel

SEED = 29
IMGSZ = 320
NAMES = [
    "person", "face", "hand", "cat", "dog", "cup", "rocket", "helmet", "flag",
    "bean", "saucer", "spoon", "glove", "visor", "window", "sky", "cloud", "table",
]  # fmt: skip
CLASS_BIAS = -2.0
LOGIT_GAIN = 3.0


def _photos(paths: list[str]) -> torch.Tensor:
    """The photos as a batch, RGB 0..1, stretched to IMGSZ (only statistics are taken)."""
    import cv2

    images = []
    for path in paths:
        bgr = cv2.imread(path, cv2.IMREAD_COLOR)
        if bgr is None:
            raise SystemExit(f"cannot read {path}")
        rgb = cv2.resize(bgr, (IMGSZ, IMGSZ), interpolation=cv2.INTER_LINEAR)[:, :, ::-1].copy()
        images.append(torch.from_numpy(rgb).permute(2, 0, 1).float() / 255)
    return torch.stack(images)


def _initialise(network: DetectionModel, photos: torch.Tensor) -> None:
    """BatchNorm statistics from the photos, then class logits of a spread fit for scores."""
    for module in network.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = 1.0  # the running statistics become those of this one batch
    network.train()
    with torch.no_grad():
        network(photos)
    network.eval()
    head = network.model[-1]
    logits: dict[int, torch.Tensor] = {}
    hooks = [
        branch[-1].register_forward_hook(lambda _m, _i, out, k=k: logits.__setitem__(k, out))
        for k, branch in enumerate(head.cv3)  # one branch per stride: its last conv gives the logits
    ]
    with torch.no_grad():
        network(photos)
        for k, branch in enumerate(head.cv3):
            branch[-1].weight /= logits[k].std() * LOGIT_GAIN
            branch[-1].bias.fill_(CLASS_BIAS)
    for hook in hooks:
        hook.remove()


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    model = YOLO("yolov8n.yaml")
    network = DetectionModel("yolov8n.yaml", nc=len(NAMES), verbose=False)
    network.names = dict(enumerate(NAMES))
    network.args, network.task = model.model.args, model.model.task  # what YOLO() gave its own
    _initialise(network, _photos(sys.argv[2:]))
    model.model = network
    metadata: list[dict] = []
    model.add_callback("on_export_end", lambda exporter: metadata.append(exporter.metadata))
    exported = Path(model.export(format="onnx", dynamic=True, imgsz=IMGSZ, simplify=True, verbose=False))
    shutil.move(str(exported), out / "model.onnx")
    (out / "metadata.txt").write_text(str(metadata[0]), encoding="utf-8")
    print(out / "model.onnx")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
