"""The baseline `bench_infer_vs_plain.py` compares `python -m app infer` with: a plain
tritonclient script doing the same job (read every image of a folder with cv2.imread, convert
to RGB, async_infer with at most C requests in flight, count the results).

    python tests/bench/plain_infer.py --url HOST:PORT --concurrency C FOLDER
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import cv2
import numpy as np
import tritonclient.grpc as grpcclient

OUTPUTS = ("num_dets", "det_boxes", "det_scores", "det_classes")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--model", default="face_detector")
    p.add_argument("folder")
    args = p.parse_args()

    client = grpcclient.InferenceServerClient(args.url)
    outputs = [grpcclient.InferRequestedOutput(n) for n in OUTPUTS]
    slots = threading.Semaphore(args.concurrency)
    lock = threading.Lock()
    counts = {"ok": 0, "failed": 0}

    def done(result: object, error: object) -> None:
        with lock:
            counts["failed" if error is not None else "ok"] += 1
        slots.release()

    paths = sorted(q for q in Path(args.folder).rglob("*") if q.is_file())
    for path in paths:
        bgr = cv2.imread(str(path))
        if bgr is None:
            with lock:
                counts["failed"] += 1
            continue
        rgb = np.ascontiguousarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))[None]
        inp = grpcclient.InferInput("image", list(rgb.shape), "UINT8")
        inp.set_data_from_numpy(rgb)
        slots.acquire()
        client.async_infer(args.model, [inp], done, outputs=outputs)
    for _ in range(args.concurrency):  # every slot back: every reply arrived
        slots.acquire()
    client.close()
    print(f"ok={counts['ok']} failed={counts['failed']}")
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
