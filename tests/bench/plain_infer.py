"""The baseline the speed benchmarks compare `python -m app infer` with: a plain tritonclient
script doing the same job (read every image of a folder with cv2.imread, or every frame of a
video with cv2.VideoCapture; convert to RGB; async_infer the full image over gRPC with at most
C requests in flight; count the results).

    python tests/bench/plain_infer.py --url HOST:PORT --concurrency C FOLDER
    python tests/bench/plain_infer.py --url HOST:PORT --concurrency C --video FILE
    python tests/bench/plain_infer.py --url HOST:PORT --smoke  (4 generated images: seconds)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import tritonclient.grpc as grpcclient

OUTPUTS = ("num_dets", "det_boxes", "det_scores", "det_classes")


def images(folder: str) -> Iterator[np.ndarray | None]:
    for path in sorted(q for q in Path(folder).rglob("*") if q.is_file()):
        yield cv2.imread(str(path))


def frames(video: str) -> Iterator[np.ndarray]:
    cap = cv2.VideoCapture(video)
    try:
        while True:
            ok, bgr = cap.read()
            if not ok:
                return
            yield bgr
    finally:
        cap.release()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--model", default="face_detector")
    p.add_argument("--video", default=None, help="every frame of this video instead of a folder")
    p.add_argument("folder", nargs="?")
    p.add_argument("--smoke", action="store_true", help="4 generated 640x480 images instead of FOLDER")
    args = p.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="plain-infer-") as tmp:
            rng = np.random.default_rng(0)
            for i in range(4):
                cv2.imwrite(f"{tmp}/{i}.jpg", rng.integers(0, 256, (480, 640, 3), dtype=np.uint8))
            args.folder = tmp
            return run(args)
    if not (args.folder or args.video):
        p.error("a FOLDER or --video is needed")
    return run(args)


def run(args: argparse.Namespace) -> int:

    client = grpcclient.InferenceServerClient(args.url)
    outputs = [grpcclient.InferRequestedOutput(n) for n in OUTPUTS]
    slots = threading.Semaphore(args.concurrency)
    lock = threading.Lock()
    counts = {"ok": 0, "failed": 0}

    def done(result: object, error: object) -> None:
        with lock:
            counts["failed" if error is not None else "ok"] += 1
        slots.release()

    for bgr in frames(args.video) if args.video else images(args.folder):
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
