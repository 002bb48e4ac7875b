"""Where the Ultralytics reference venv and its cached export live, and how to run a script
in that venv (from the product's venv: the tests never import Ultralytics themselves).

Both are kept per machine outside the clone, under ${TRITON_VIEWER_CACHE:-~/.cache/triton-viewer}:
- venvs/ultralytics-<sha256(requirements.txt)[:16]>: built by setup_ultralytics.sh
  (`make ultralytics`); $ULTRALYTICS_PYTHON names another python instead;
- exports/yolov8n-<sha256(requirements, export_model.py, the photos)[:16]>: model.onnx and
  metadata.txt, exported once (a few seconds) by export_model.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
EXPORT_SCRIPT = HERE / "export_model.py"
PREDICT_SCRIPT = HERE / "predict.py"


def cache_root() -> Path:
    return Path(os.environ.get("TRITON_VIEWER_CACHE") or Path.home() / ".cache" / "triton-viewer")


def _sha(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def venv_python() -> Path:
    """The reference venv's python; RuntimeError saying how to build it when it is missing."""
    named = os.environ.get("ULTRALYTICS_PYTHON")
    if named:
        return Path(named)
    sha = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    venv = cache_root() / "venvs" / f"ultralytics-{sha}"
    if not (venv / ".installed").is_file():
        raise RuntimeError(f"the Ultralytics reference venv {venv} is not built: run `make ultralytics`")
    return venv / "bin" / "python"


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Its settings file in the cache, never the user's; no pip installs behind the test's back.
    env.update(YOLO_CONFIG_DIR=str(cache_root() / "ultralytics-config"), YOLO_AUTOINSTALL="false")
    env.update(YOLO_OFFLINE="true", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return env


def run_script(script: Path, args: list[str], stdin: str = "", timeout: float = 600) -> str:
    """Run `script` in the reference venv (in a scratch folder: Ultralytics writes files
    where it runs); its stdout, or RuntimeError with its stderr's end."""
    with tempfile.TemporaryDirectory(prefix="ultralytics-") as scratch:
        done = subprocess.run(
            [str(venv_python()), str(script), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=scratch,
            env=_env(Path(scratch)),
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done.stdout


def exported_model(photos: list[Path]) -> Path:
    """The folder holding model.onnx and metadata.txt, exported now unless cached."""
    key = _sha(REQUIREMENTS.read_bytes(), EXPORT_SCRIPT.read_bytes(), *(p.read_bytes() for p in photos))
    folder = cache_root() / "exports" / f"yolov8n-{key}"
    if (folder / "model.onnx").is_file() and (folder / "metadata.txt").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        run_script(EXPORT_SCRIPT, [str(staging), *(str(p) for p in photos)])
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)  # whole or not at all: a killed export leaves no half folder
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def ultralytics_predictions(
    url: str, images: list[Path], *, conf: float, iou: float, imgsz: int, rect: bool
) -> dict[str, Any]:
    """Ultralytics' own predictions through Triton (predict.py's answer)."""
    request = {"url": url, "images": [str(p) for p in images], "conf": conf, "iou": iou}
    request.update(imgsz=imgsz, rect=rect)
    answer: dict[str, Any] = json.loads(run_script(PREDICT_SCRIPT, [], json.dumps(request)))
    return answer
