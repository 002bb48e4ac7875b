"""insightface's SCRFD face detector as insightface publishes it, the reference of the app's
SCRFD decoding (tests/integration/test_scrfd_insightface.py).

- `scrfd_source()`: `insightface/model_zoo/scrfd.py` out of the insightface 0.7.3 sdist on
  PyPI (MIT), fetched once per machine into the cache, checked against the sdist's sha256.
  The file, not the package: insightface ships only an sdist whose build compiles a Cython
  3D-mesh extension, and its __init__ imports that; the detector needs numpy, OpenCV and
  onnxruntime only (and imports onnx).
- `scrfd_predictions(out, photos)`: tests/reference/scrfd_runner.py run by the product's own
  python with onnx (installed without dependencies into the cache) on PYTHONPATH. The
  product's numpy, on purpose: insightface orders candidates with numpy's argsort, whose
  order of equal scores (the black padding gives many) changed with numpy 2's sort; the app
  runs numpy 1.26 (nvidia-pytriton's numpy<2), so the reference does too.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from tests.reference.package_cache import installed_without_deps
from tests.ultralytics.venv import cache_root

VERSION = "0.7.3"
SDIST = (
    "https://files.pythonhosted.org/packages/0b/8d/0f4af90999ca96cf8cb846eb5ae27c5ef5b390f9c090dd19e4fa76364c13/"
    f"insightface-{VERSION}.tar.gz"
)
SHA256 = "f191f719612ebb37018f41936814500544cd0f86e6fcd676c023f354c668ddf7"
MEMBER = f"insightface-{VERSION}/insightface/model_zoo/scrfd.py"
ONNX = "onnx==1.23.2"  # the Ultralytics venv's (tests/ultralytics/requirements.txt)
RUNNER = Path(__file__).with_name("scrfd_runner.py")


def scrfd_source() -> Path:
    """The path of insightface's scrfd.py in the machine's cache, fetched now unless there."""
    folder = cache_root() / "pkgs" / f"insightface-{VERSION}"
    target = folder / "scrfd.py"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:  # two clones: one download
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        with urllib.request.urlopen(SDIST, timeout=120) as reply:
            sdist = reply.read()
        digest = hashlib.sha256(sdist).hexdigest()
        if digest != SHA256:
            raise RuntimeError(f"{SDIST}: sha256 {digest}, expected {SHA256}")
        with tarfile.open(fileobj=io.BytesIO(sdist), mode="r:gz") as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise RuntimeError(f"{SDIST} has no {MEMBER}")
            text = member.read()
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as staging:
            staging.write(text)
        Path(staging.name).rename(target)  # whole or not at all
    return target


def scrfd_predictions(out: Path, photos: list[Path]) -> dict[str, Any]:
    """The runner's models (OUT/NAME/model.onnx) and insightface's detections on the photos
    (OUT/predictions.json, also returned)."""
    env = {**os.environ, "PYTHONPATH": str(installed_without_deps(ONNX, "onnx/__init__.py"))}
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(out), str(scrfd_source()), *map(str, photos)],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"scrfd_runner.py failed ({done.returncode}): {done.stderr[-3000:]}")
    predictions: dict[str, Any] = json.loads((out / "predictions.json").read_text())
    return predictions
