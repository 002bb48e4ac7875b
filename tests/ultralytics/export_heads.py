"""Exports Ultralytics heads of several families and tasks to ONNX: runs INSIDE the
Ultralytics venv (tests/ultralytics/setup_ultralytics.sh), never imported by the product.

    python export_heads.py OUT_DIR SPEC... -- PHOTO...

SPEC is `MODEL:IMGSZ`, MODEL an Ultralytics yaml stem (yolo26n, yolov10n, yolo26n-pose,
yolov8n-obb, yolov8n-seg, yolov8n-cls, rtdetr-l, ...). Each goes to OUT_DIR/MODEL-IMGSZ/:
model.onnx, metadata.txt (`str(exporter.metadata)`, what Ultralytics' Triton guide writes into
config.pbtxt) and outputs.json (the file's output names and shapes, for the Triton config).

Exported with `nms=False`: YOLOv10 and YOLO26 keep their NMS-free head ([1, 300, 6 + E]);
YOLOv8/11 answer raw. Random weights, seeded, given the data-dependent initialisation of
export_model.py on the PHOTOs (BatchNorm statistics, class logits spread to 1/LOGIT_GAIN
with CLASS_BIAS) on every class branch, the NMS-free one's included, so that the photos give
detections of many classes with scores spread below 1 (no ties). A classifier's logits are
spread to a standard deviation of CLS_LOGIT_STD on the photos (its top classes a few tenths
apart, none near 1).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import onnx
import torch
from ultralytics import RTDETR, YOLO
from ultralytics.nn.modules.head import Classify

SEED = 29
CLASS_BIAS = -3.0
LOGIT_GAIN = 6.0
CLS_LOGIT_STD = 1.5


def _photos(paths: list[str], imgsz: int) -> torch.Tensor:
    import cv2

    images = []
    for path in paths:
        bgr = cv2.imread(path, cv2.IMREAD_COLOR)
        if bgr is None:
            raise SystemExit(f"cannot read {path}")
        rgb = cv2.resize(bgr, (imgsz, imgsz), interpolation=cv2.INTER_LINEAR)[:, :, ::-1].copy()
        images.append(torch.from_numpy(rgb).permute(2, 0, 1).float() / 255)
    return torch.stack(images)


def _initialise(network: torch.nn.Module, photos: torch.Tensor) -> None:
    for module in network.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = 1.0
    network.train()
    with torch.no_grad():
        network(photos)
    network.eval()
    head = network.model[-1]
    if isinstance(head, Classify):
        _spread_classifier(network, head, photos)
        return
    branches = [b for name in ("cv3", "one2one_cv3") for b in (getattr(head, name, None) or [])]
    logits: dict[int, torch.Tensor] = {}
    hooks = [
        b[-1].register_forward_hook(lambda _m, _i, out, k=k: logits.__setitem__(k, out))
        for k, b in enumerate(branches)
    ]
    with torch.no_grad():
        network(photos)
        for k, b in enumerate(branches):
            b[-1].weight /= logits[k].std() * LOGIT_GAIN
            b[-1].bias.fill_(CLASS_BIAS)
    for hook in hooks:
        hook.remove()


def _spread_classifier(network: torch.nn.Module, head: Classify, photos: torch.Tensor) -> None:
    """The classifier's logits (its last linear layer) scaled to CLS_LOGIT_STD on the photos:
    left random they are all but equal (a softmax of 1/1000 each)."""
    logits: list[torch.Tensor] = []
    hook = head.linear.register_forward_hook(lambda _m, _i, out: logits.append(out))
    with torch.no_grad():
        network(photos)
        head.linear.weight *= CLS_LOGIT_STD / logits[0].std()
        head.linear.bias.zero_()
    hook.remove()


def export(spec: str, out: Path, photos: list[str]) -> None:
    name, imgsz_text = spec.split(":")
    imgsz = int(imgsz_text)
    torch.manual_seed(SEED)
    if name.startswith("rtdetr"):  # its decoder trains with targets: left as seeded
        model = RTDETR(f"{name}.yaml")
    else:
        model = YOLO(f"{name}.yaml")
        _initialise(model.model, _photos(photos, imgsz))
    metadata: list[dict] = []
    model.add_callback("on_export_end", lambda exporter: metadata.append(exporter.metadata))
    exported = Path(model.export(format="onnx", imgsz=imgsz, nms=False, simplify=True, verbose=False))
    folder = out / f"{name}-{imgsz}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.move(str(exported), folder / "model.onnx")
    (folder / "metadata.txt").write_text(str(metadata[0]), encoding="utf-8")
    graph = onnx.load(str(folder / "model.onnx")).graph
    outputs = [
        {"name": o.name, "dims": [d.dim_value for d in o.type.tensor_type.shape.dim]} for o in graph.output
    ]
    (folder / "outputs.json").write_text(json.dumps(outputs), encoding="utf-8")


def main() -> int:
    out = Path(sys.argv[1])
    split = sys.argv.index("--")
    specs, photos = sys.argv[2:split], sys.argv[split + 1 :]
    for spec in specs:
        export(spec, out, photos)
        print(spec, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
