"""Decoding beyond boxes vs the models' own latency: `python tests/bench/bench_masks.py`.

Not a pytest module. Prints medians (ms) of:
- a mask-heavy YOLOv8-seg frame: [1, 116, 8400] + prototypes [1, 32, 160, 160] with 50
  instances (clusters of candidates, as a real model gives), decoded into boxes + masks in
  original pixels for a 640x640 and a 1920x1080 image (as Ultralytics does, a detection whose
  mask is empty at the input's size is dropped: 41 of the 50 are reported); separately the
  COCO RLE of all the masks (only made when a record is written);
- a 50-person YOLOv8-pose frame [1, 56, 8400];
- the person_segmentation map [1, 1, 256, 256] to a 640x480 and a 1920x1080 mask (+ RLE);
and, from a real Triton server (embedded unless --url), the models' own latency: the
server's compute time per request (statistics deltas) and the client round trip, for
person_segmentation and face_detector on a 640x480 frame.

Run: .venv/bin/python tests/bench/bench_masks.py [--url HOST:PORT] [--requests 200]
--smoke: 2 runs, 5 requests (seconds; what `make test` runs so the script cannot rot).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.inference.decoding.letterbox import IdentityTransform, LetterboxTransform
from app.inference.masks import BinaryMask
from app.inference.profile_kinds import OutputFormat, Preprocess, Task
from app.inference.profiles.postprocess import decode_outputs
from app.inference.profiles.profile import ModelProfile
from tests.bench.bench_pure import RUNS, SMOKE_RUNS, median_ms

N_INSTANCES = 50


def _clusters(rng: np.random.Generator, out: np.ndarray, n: int, per: int = 8) -> list[np.ndarray]:
    """n objects on a grid over 640x640, each seen by `per` jittered candidate columns."""
    cols = rng.choice(out.shape[2], n * per, replace=False)
    groups = np.array_split(cols, n)
    side = int(np.ceil(np.sqrt(n)))
    for k, group in enumerate(groups):
        cx, cy = (k % side + 0.5) * 640 / side, (k // side + 0.5) * 640 / side
        size = rng.uniform(40, 640 / side, 2)
        out[0][0:2, group] = np.array([cx, cy])[:, None] + rng.normal(0, 3, (2, len(group)))
        out[0][2:4, group] = size[:, None] * rng.uniform(0.95, 1.05, (2, len(group)))
    return groups


def segment_frame(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], ModelProfile]:
    out = np.zeros((1, 4 + 80 + 32, 8400), np.float32)
    out[0, 4:84] = rng.uniform(0, 0.1, (80, 8400))
    for k, group in enumerate(_clusters(rng, out, N_INSTANCES)):
        out[0][4 + k % 80, group] = rng.uniform(0.5, 0.95, len(group))
        out[0][84:, group] = rng.normal(0, 1, 32)[:, None]  # one mask per object
    centres = (np.arange(160) + 0.5) * 4
    y, x = np.meshgrid(centres, centres, indexing="ij")
    protos = np.stack([np.sin(x / (20 + 3 * i)) * np.cos(y / (25 + 2 * i)) * 4 for i in range(32)])
    profile = ModelProfile(
        input_name="images", input_layout="NCHW", input_dtype="FP32", input_size=(640, 640),
        has_batch_dim=True, preprocess=Preprocess.LETTERBOX, output_format=OutputFormat.YOLOV8,
        task=Task.SEGMENT,
        output_names=("output0", "output1"),
    )  # fmt: skip
    return {"output0": out, "output1": protos[None].astype(np.float32)}, profile


def pose_frame(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], ModelProfile]:
    out = np.zeros((1, 56, 8400), np.float32)
    for group in _clusters(rng, out, N_INSTANCES):
        out[0][4, group] = rng.uniform(0.5, 0.95, len(group))
        out[0][5:, group] = rng.uniform(0, 640, 51)[:, None]
    profile = ModelProfile(
        input_name="images", input_layout="NCHW", input_dtype="FP32", input_size=(640, 640),
        has_batch_dim=True, preprocess=Preprocess.LETTERBOX, output_format=OutputFormat.YOLOV8,
        task=Task.POSE, kpt_shape=(17, 3),
        output_names=("output0",),
    )  # fmt: skip
    return {"output0": out}, profile


def letterbox_of(h: int, w: int) -> LetterboxTransform:
    r = min(640 / h, 640 / w)
    left, top = round((640 - round(w * r)) / 2 - 0.1), round((640 - round(h * r)) / 2 - 0.1)
    return LetterboxTransform(r, left, top, w, h, 640, 640)


def encode_all(masks: list[BinaryMask]) -> None:
    for mask in masks:
        mask.encode_rle()  # the encoding, not rle()'s cache


def pure_figures(runs: int, rle_runs: int) -> None:
    rng = np.random.default_rng(0)
    outputs, profile = segment_frame(rng)
    for h, w in ((640, 640), (1080, 1920)):
        transform = letterbox_of(h, w)
        decode = median_ms(functools.partial(decode_outputs, outputs, profile, transform), runs)
        masks = [d.mask for d in decode_outputs(outputs, profile, transform).detections if d.mask is not None]
        rle = median_ms(functools.partial(encode_all, masks), rle_runs)
        area = sum(m.area for m in masks) / max(len(masks), 1)
        print(
            f"segment {w}x{h}: {len(masks)} instances (mean mask {area:.0f} px): "
            f"decode boxes + masks {decode:.2f} ms; COCO RLE of all masks {rle:.2f} ms"
        )
    outputs, profile = pose_frame(rng)
    transform = letterbox_of(1080, 1920)
    n = len(decode_outputs(outputs, profile, transform).detections)
    decode = median_ms(lambda: decode_outputs(outputs, profile, transform), runs)
    print(f"pose 1920x1080: {n} people x 17 keypoints: decode {decode:.2f} ms")
    probability = np.zeros((1, 1, 256, 256), np.float32)
    probability[0, 0, 40:230, 60:200] = 0.97
    semantic = ModelProfile(
        input_name="image", input_layout="NHWC", input_dtype="UINT8", input_size=None, has_batch_dim=True,
        preprocess=Preprocess.RAW, output_format=OutputFormat.SEMANTIC, task=Task.SEMANTIC,
        output_names=("p",), labels=("person",),
    )  # fmt: skip
    for h, w in ((480, 640), (1080, 1920)):
        t = IdentityTransform(w, h)
        decode = median_ms(functools.partial(decode_outputs, {"p": probability}, semantic, t), runs)
        semantic_masks = [m.mask for m in decode_outputs({"p": probability}, semantic, t).masks or []]
        rle = median_ms(functools.partial(encode_all, semantic_masks), rle_runs)
        print(f"semantic {w}x{h} person map: decode {decode:.2f} ms; RLE {rle:.2f} ms")
    print(f"(median of {runs} runs, RLE of {rle_runs})")


def server_figures(url: str, requests: int, warmup: int) -> None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    frame = np.random.default_rng(1).integers(0, 256, (1, 480, 640, 3), dtype=np.uint8)
    try:
        for model in ("person_segmentation", "face_detector"):
            inp = grpcclient.InferInput("image", list(frame.shape), "UINT8")
            inp.set_data_from_numpy(frame)
            for _ in range(warmup):
                client.infer(model, [inp])
            before = client.get_inference_statistics(model, as_json=True)["model_stats"][0]["inference_stats"]
            rtts = []
            for _ in range(requests):
                t0 = time.perf_counter()
                client.infer(model, [inp])
                rtts.append((time.perf_counter() - t0) * 1000)
            after = client.get_inference_statistics(model, as_json=True)["model_stats"][0]["inference_stats"]

            def per_request(key: str, a: dict = after, b: dict = before) -> float:
                count = int(a[key]["count"]) - int(b[key]["count"])
                return (int(a[key]["ns"]) - int(b[key]["ns"])) / max(count, 1) / 1e6

            compute = sum(per_request(k) for k in ("compute_input", "compute_infer", "compute_output"))
            print(
                f"{model} 640x480, one at a time: server compute {compute:.2f} ms/request, "
                f"round trip p50 {statistics.median(rtts):.2f} ms ({requests} requests)"
            )
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a Triton gRPC address serving the bundled models (default: start one)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="seconds: figures printed, meaningless")
    args = parser.parse_args()
    if args.smoke:
        args.requests = 5
    pure_figures(SMOKE_RUNS if args.smoke else RUNS, SMOKE_RUNS if args.smoke else 10)
    with ExitStack() as stack:
        url = args.url
        if url is None:
            from app.resources import model_repository
            from app.server.embedded import EmbeddedServer

            url = stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        server_figures(url, args.requests, 2 if args.smoke else 10)


if __name__ == "__main__":
    main()
