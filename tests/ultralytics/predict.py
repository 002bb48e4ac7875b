"""Ultralytics' own prediction of a model served by Triton: runs INSIDE the Ultralytics venv
(tests/ultralytics/setup_ultralytics.sh), never imported by the product or its venv.

Reads JSON on stdin: {"url": "grpc://127.0.0.1:PORT/MODEL", "images": [path, ...],
                      "conf": 0.25, "iou": 0.7, "imgsz": 320, "rect": false}
Optional: "task" (detect, segment, pose, obb, classify; default detect), "family": "rtdetr"
for an RT-DETR export (Ultralytics' RTDETR class and its predictor).
Writes JSON on stdout: {"ultralytics": version, "imgsz": [H, W] (what its predictor fed),
  "names": {id: name}, "results": [{"width", "height",
  "detections": [{"box": [x1, y1, x2, y2], "score", "class_id"}]}]}
  (pose: each detection also has "keypoints" [[x, y, score], ...]; segment: "mask_counts",
  its mask in original pixels as COCO's uncompressed RLE counts; obb: "obb" [cx, cy, w, h,
  angle] and "box" the axis-aligned box around it, unclipped, as Ultralytics gives both;
  classify: no detections but "classes", its top 5 [{"class_id", "score"}], best first)

`YOLO(url)` is Ultralytics' Triton client (TritonRemoteModel): it reads the config parameter
`metadata` with ast.literal_eval for the names, imgsz and stride, letterboxes each image and
runs its own NMS (ultralytics.utils.nms) on the raw output. For an export with dynamic axes
(the metadata's args say dynamic) Ultralytics 8.4 does not take imgsz from the metadata but
from its `imgsz` argument (default 640), and pads only to a multiple of the stride (`rect`):
`imgsz` and `rect` are passed as the request says.
"""

from __future__ import annotations

import json
import sys

import ultralytics
from ultralytics import RTDETR, YOLO


def _run_lengths(mask: object) -> list[int]:
    """Column-major run lengths of a bool (h, w) mask, the first one of zeros (maybe 0)."""
    import numpy as np

    flat = np.asarray(mask, dtype=bool).flatten(order="F")
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    lengths = np.diff(np.concatenate([[0], change, [flat.size]]))
    return [int(v) for v in (np.concatenate([[0], lengths]) if flat[0] else lengths)]


def main() -> int:
    request = json.load(sys.stdin)
    # Ultralytics prints (its settings file, warnings) on stdout: the answer alone goes there.
    answer = sys.stdout
    sys.stdout = sys.stderr
    if request.get("family") == "rtdetr":  # its own predictor (normalised boxes, no NMS)
        model = RTDETR(request["url"])
    else:
        model = YOLO(request["url"], task=request.get("task", "detect"))
    results = []
    imgsz = None
    for path in request["images"]:
        (result,) = model.predict(
            path,
            conf=request["conf"],
            iou=request["iou"],
            imgsz=request.get("imgsz", 640),
            rect=request.get("rect", True),
            verbose=False,
        )
        imgsz = list(model.predictor.imgsz)
        h, w = result.orig_shape
        if result.probs is not None:  # a classifier: its own top 5 (its classify transforms fed it)
            top = zip(result.probs.top5, result.probs.top5conf.tolist(), strict=True)
            classes = [{"class_id": int(c), "score": float(p)} for c, p in top]
            results.append({"width": int(w), "height": int(h), "detections": [], "classes": classes})
            continue
        boxes = result.obb if result.obb is not None else result.boxes
        detections = [
            {"box": [float(v) for v in box], "score": float(score), "class_id": int(cls)}
            for box, score, cls in zip(
                boxes.xyxy.tolist(), boxes.conf.tolist(), boxes.cls.tolist(), strict=True
            )
        ]
        if result.obb is not None:
            for detection, xywhr in zip(detections, result.obb.xywhr.tolist(), strict=True):
                detection["obb"] = [float(v) for v in xywhr]
        if result.masks is not None:
            # Its masks (at the input's size) taken to the original image as its plots and
            # polygons do (ops.scale_masks, > 0.5), as column-major run lengths from 0 (COCO's
            # uncompressed RLE counts).
            from ultralytics.utils import ops

            scaled = ops.scale_masks(result.masks.data[:, None].float(), (h, w))[:, 0] > 0.5
            for detection, mask in zip(detections, scaled.cpu().numpy(), strict=True):
                detection["mask_counts"] = _run_lengths(mask)
        if result.keypoints is not None:
            for detection, points in zip(detections, result.keypoints.data.tolist(), strict=True):
                detection["keypoints"] = points
        results.append({"width": int(w), "height": int(h), "detections": detections})
    json.dump(
        {
            "ultralytics": ultralytics.__version__,
            "imgsz": imgsz,
            "names": {str(k): v for k, v in model.names.items()},
            "results": results,
        },
        answer,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
