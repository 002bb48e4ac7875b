"""The baseline the speed benchmarks compare `python -m app infer` with: a plain tritonclient
script doing the same job (read every image of a folder with cv2.imread, or every frame of a
video with cv2.VideoCapture; convert to RGB; async_infer the full image over gRPC with at most
C requests in flight, app.pipeline.plain_loops's loop; count the results).

    python tests/bench/plain_infer.py --url HOST:PORT --concurrency C FOLDER
    python tests/bench/plain_infer.py --url HOST:PORT --concurrency C --video FILE
    python tests/bench/plain_infer.py --url HOST:PORT --smoke  (4 generated images: seconds)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.inference.protocol import parse_url
from app.pipeline.plain_loops import PlainGrpcLoop


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
    loop = PlainGrpcLoop(parse_url(args.url), args.model)
    unreadable = [0]

    def requests() -> Iterator[list[Any]]:
        for bgr in frames(args.video) if args.video else images(args.folder):
            if bgr is None:
                unreadable[0] += 1
                continue
            rgb = np.ascontiguousarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))[None]
            yield loop.inputs(rgb, "image", "UINT8")

    try:
        figures = loop.run(args.concurrency, requests())
    finally:
        loop.close()
    failed = figures.failed + unreadable[0]
    print(f"ok={figures.ok} failed={failed}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
