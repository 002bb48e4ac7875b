"""Client memory for one image: `python tests/bench/bench_image_memory.py [--url HOST:PORT]`.

Not a pytest module. Runs `python -m app infer` on one image at a time against a server
serving face_detector (default: starts one with the bundled repository) and prints each
run's peak RSS (its VmHWM) and its record's status:
- a 64x64 JPEG (the baseline: interpreter, OpenCV, gRPC),
- a 68 KB JPEG whose header announces 30000 x 30000 (refused from its header),
- a 20000 x 20000 PNG (refused from its header; a real file, 1.2 GB of pixels once decoded),
- 8000 x 8000 = 64 MP (the limit) PNGs, 8-bit and 16-bit RGB: decoded in full.
--smoke: 2000 x 2000 PNGs and a 9000 x 9000 one in place of the big ones (seconds).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import zlib
from contextlib import ExitStack
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.resources import model_repository  # noqa: E402
from app.server.embedded import EmbeddedServer  # noqa: E402


def blank_png(path: Path, width: int, height: int) -> None:
    """A real RGB PNG of zeros, compressed row by row (never held whole in memory)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    squeeze = zlib.compressobj(6)
    row = b"\x00" * (1 + 3 * width)  # filter byte 0, then the row's pixels
    parts = []
    for _ in range(height):
        parts.append(squeeze.compress(row))
    parts.append(squeeze.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"".join(parts)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def announcing(path: Path, width: int, height: int) -> None:
    """A real 320 x 240 JPEG whose frame header announces width x height."""
    rng = np.random.default_rng(1)
    ok, encoded = cv2.imencode(".jpg", rng.integers(0, 255, (240, 320, 3), dtype=np.uint8))
    assert ok
    data = encoded.tobytes()
    sof = next(i for i in range(2, len(data) - 1) if data[i] == 0xFF and data[i + 1] == 0xC0)
    path.write_bytes(data[: sof + 5] + struct.pack(">HH", height, width) + data[sof + 9 :])


# `python -m app ...` that prints its own peak RSS (VmHWM) to stderr at exit. (A child's
# ru_maxrss would count the RSS this process had when it forked, big images included.)
WITH_PEAK = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    line = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "    print('PEAK', int(line.split()[1]), file=sys.stderr)\n"
    "atexit.register(peak)\n"
    "sys.argv = ['app', *sys.argv[1:]]\n"
    "runpy.run_module('app', run_name='__main__')\n"
)


def peak_of_infer(url: str, image: Path) -> tuple[float, str]:
    """(peak RSS in MB, the record's status and error) of one `infer` run on `image`."""
    done = subprocess.run(
        [sys.executable, "-c", WITH_PEAK, "infer", "--url", url, "--model", "face_detector", str(image)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    record = json.loads(done.stdout.splitlines()[0])
    status = record["status"] + (f" ({record['error']})" if record.get("error") else "")
    peak_kb = next(int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK "))
    return peak_kb / 1024, status


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", help="a server serving face_detector (default: start one)")
    p.add_argument("--smoke", action="store_true", help="small images: seconds, figures meaningless")
    args = p.parse_args()
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-image-memory-")))
        url = args.url or stack.enter_context(EmbeddedServer(model_repository())).grpc_url
        side = 2000 if args.smoke else 8000
        cv2.imwrite(str(folder / "small.jpg"), np.full((64, 64, 3), 90, np.uint8))
        announcing(folder / "announces_30000.jpg", 30000, 30000)
        big = 9000 if args.smoke else 20000
        blank_png(folder / f"blank_{big}.png", big, big)
        picture = np.zeros((side, side, 3), np.uint8)
        picture[:, :, 1] = np.arange(side, dtype=np.uint32)[None, :] % 256
        cv2.imwrite(str(folder / f"rgb8_{side}.png"), picture, [cv2.IMWRITE_PNG_COMPRESSION, 1])
        deep = picture.astype(np.uint16) * 257
        del picture
        cv2.imwrite(str(folder / f"rgb16_{side}.png"), deep, [cv2.IMWRITE_PNG_COMPRESSION, 1])
        del deep
        names = [
            "small.jpg",
            "announces_30000.jpg",
            f"blank_{big}.png",
            f"rgb8_{side}.png",
            f"rgb16_{side}.png",
        ]
        baseline = None
        for name in names:
            path = folder / name
            peak, status = peak_of_infer(url, path)
            baseline = peak if baseline is None else baseline
            size = path.stat().st_size / 1e6
            print(
                f"{name} ({size:.1f} MB file): peak RSS {peak:.0f} MB (+{peak - baseline:.0f} MB): {status}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
