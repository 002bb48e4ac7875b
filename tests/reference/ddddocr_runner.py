"""ddddocr's own text detection (its YOLOX model and its own post-processing): runs in a
subprocess with ddddocr on PYTHONPATH (tests/reference/ddddocr_reference.py), never imported
by the product or the test process.

Reads a JSON list of image paths on stdin; writes {"model": path of common_det.onnx,
"boxes": [[[x1, y1, x2, y2], ...] per image]} (ddddocr's integer boxes) on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    import ddddocr
    from ddddocr.core.detection_engine import DetectionEngine

    paths = json.load(sys.stdin)
    engine = DetectionEngine()
    engine.initialize()
    boxes = [engine.get_bbox(Path(p).read_bytes()) for p in paths]
    model = Path(ddddocr.__file__).with_name("common_det.onnx")
    json.dump({"model": str(model), "boxes": boxes}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
