"""ddddocr 1.6.1 (MIT, PyPI) as a reference: its package ships a trained YOLOX detector
(`ddddocr/common_det.onnx`, [1, 3, 416, 416] -> [1, 3549, 6]) and its own post-processing.

Installed once per machine with `pip install --no-deps` into a folder of the cache (its
dependencies, onnxruntime, OpenCV, numpy and Pillow, are the product venv's own), and run in
a subprocess with that folder on PYTHONPATH: the test process never imports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.reference.package_cache import installed_without_deps

VERSION = "1.6.1"
RUNNER = Path(__file__).with_name("ddddocr_runner.py")


def package_folder() -> Path:
    """The folder holding the ddddocr package, installed now unless cached."""
    return installed_without_deps(f"ddddocr=={VERSION}", "ddddocr/common_det.onnx")


def ddddocr_boxes(images: list[Path]) -> dict[str, Any]:
    """The runner's answer: the model file's path and ddddocr's boxes per image."""
    env = {**os.environ, "PYTHONPATH": str(package_folder())}
    done = subprocess.run(
        [sys.executable, str(RUNNER)],
        input=json.dumps([str(p) for p in images]),
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"ddddocr runner failed ({done.returncode}): {done.stderr[-3000:]}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer
