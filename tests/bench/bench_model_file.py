"""A model file served by the app: how long reading it takes, how long a Triton takes to load it
through the Python-backend model (uploaded, as `--url` does), and what the model then serves
(`bench`'s sweep at concurrency 1 and 8: the wrapper batches the requests the dynamic batcher
gives it).

The file: the Ultralytics YOLOv8n export the reference test caches (12 MB, dynamic axes, 320),
or with --file any .onnx; --smoke: the tiny committed test detector, few requests (seconds;
figures meaningless).

Run: .venv/bin/python tests/bench/bench_model_file.py [--file F.onnx] [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import cv2
import skimage.data

from app.inference.introspection.repository import RepositoryControl
from app.inference.model_files.reading import model_name_of, read_model_file
from app.inference.model_files.upload import serve_model_file
from app.inference.protocol import parse_url
from app.server.embedded import EmbeddedServer
from tests.cli_runner import run_cli_in_process

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "model_files" / "tiny_detector.onnx"


def cached_export() -> Path | None:
    from tests.ultralytics.venv import cache_root

    found = sorted((cache_root() / "exports").glob("yolov8n-*/model.onnx"))
    return found[-1] if found else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--file", type=Path, default=None)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--loads", type=int, default=3)
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args()
    path = TINY if args.smoke else (args.file or cached_export() or TINY)
    requests, loads = (8, 1) if args.smoke else (args.requests, args.loads)
    print(f"model file {path} ({path.stat().st_size / 1e6:.1f} MB)")

    started = time.perf_counter()
    read_model_file(path)
    took_ms = (time.perf_counter() - started) * 1000
    print(f"read with onnxruntime (inputs, outputs, metadata): {took_ms:.0f} ms")

    with tempfile.TemporaryDirectory() as scratch:
        photo = Path(scratch) / "astronaut.jpg"
        cv2.imwrite(str(photo), cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2BGR))
        empty = Path(scratch) / "repository"
        empty.mkdir()
        with EmbeddedServer(empty, startup_timeout=180) as server:
            name = model_name_of(path)
            seconds = []
            with RepositoryControl(parse_url(server.grpc_url)) as control:
                for _ in range(loads):
                    started = time.perf_counter()
                    serve_model_file(control, path, own_backend_first=True)
                    seconds.append(time.perf_counter() - started)
                    if len(seconds) < loads:
                        control.unload(name)
            print(
                f"upload + load (onnxruntime backend refused, then the Python-backend model), "
                f"{loads} loads: median {statistics.median(seconds):.2f} s"
            )
            report = Path(scratch) / "bench.json"
            done = run_cli_in_process(
                "bench", "--url", server.grpc_url, "--model", name, "--image", str(photo),
                "--concurrency", "1,8", "--requests", str(requests), "--output", str(report),
            )  # fmt: skip
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            for level in json.loads(report.read_text())["levels"]:
                print(
                    f"{name} 512x512 JPEG concurrency {level['concurrency']}: "
                    f"{level['throughput']:.1f} img/s, p50 {level['p50_ms']:.1f} ms, "
                    f"server batch {level['server_avg_batch'] or 0:.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
