"""Where the Ultralytics reference venv and its cached export live, and how to run a script
in that venv (from the product's venv: the tests never import Ultralytics themselves).

Both are kept per machine outside the clone, under ${TRITON_VIEWER_CACHE:-~/.cache/triton-viewer}:
- venvs/ultralytics-HASH: built by setup_ultralytics.sh through tests/venv_cache.sh
  (`make ultralytics` prints its python; `make test` passes it as $ULTRALYTICS_PYTHON);
- exports/yolov8n-<hash of requirements.txt, export_model.py and the photos>: model.onnx and
  metadata.txt, exported once (a few seconds) by export_model.py.
"""

from __future__ import annotations

import fcntl
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
HEADS_SCRIPT = HERE / "export_heads.py"
PREDICT_SCRIPT = HERE / "predict.py"
TORCHVISION_SCRIPT = HERE / "torchvision_reference.py"
TRANSFORMERS_SCRIPT = HERE / "transformers_reference.py"


def cache_root() -> Path:
    """The machine's cache, as tests/venv_cache.sh finds it."""
    named = os.environ.get("TRITON_VIEWER_CACHE")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "triton-viewer"


def _sha(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def venv_python() -> Path:
    """The reference venv's python, $ULTRALYTICS_PYTHON; RuntimeError saying how to get it."""
    named = os.environ.get("ULTRALYTICS_PYTHON")
    if not named:
        raise RuntimeError(
            "ULTRALYTICS_PYTHON is not set: run `make test`, "
            "or ULTRALYTICS_PYTHON=$(make -s ultralytics) pytest"
        )
    python = Path(named).absolute()
    if not python.is_file():
        raise RuntimeError(f"no Ultralytics venv at {python}: `make -s ultralytics` makes one")
    return python


def _env() -> dict[str, str]:
    # Its own interpreter and packages only: nothing of the product's venv leaks in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # Its settings file in the venv (setup_ultralytics.sh made it), never the user's; no pip
    # installs behind the test's back.
    env.update(YOLO_CONFIG_DIR=str(venv_python().parent.parent / "ultralytics-config"))
    env.update(YOLO_AUTOINSTALL="false")
    env.update(YOLO_OFFLINE="true", PYTHONDONTWRITEBYTECODE="1")
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
            env=_env(),
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done.stdout


def exported_model(photos: list[Path]) -> Path:
    """The folder holding model.onnx and metadata.txt, exported now unless cached."""
    return _cached("yolov8n", EXPORT_SCRIPT, photos, "metadata.txt")


def _cached(name: str, script: Path, photos: list[Path], done: str) -> Path:
    """The folder `script OUT PHOTO...` fills (`done` names its last file), run unless cached
    per machine; keyed by the requirements, the script and the photos."""
    key = _sha(REQUIREMENTS.read_bytes(), script.read_bytes(), *(p.read_bytes() for p in photos))
    folder = cache_root() / "exports" / f"{name}-{key}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:  # two clones: one run
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / done).is_file():
            return folder
        staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        try:
            run_script(script, [str(staging), *(str(p) for p in photos)])
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)  # whole or not at all: a killed run leaves no half folder
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def torchvision_reference(photos: list[Path]) -> Path:
    """model.onnx (a torchvision detector) and predictions.json (torchvision's own)."""
    return _cached("torchvision-frcnn", TORCHVISION_SCRIPT, photos, "predictions.json")


def transformers_reference(photos: list[Path]) -> Path:
    """detr/model.onnx, rtdetr/model.onnx and predictions.json (transformers' own)."""
    return _cached("transformers-detr", TRANSFORMERS_SCRIPT, photos, "predictions.json")


def exported_heads(specs: list[str], photos: list[Path]) -> dict[str, Path]:
    """Each SPEC (`MODEL:IMGSZ`, export_heads.py) -> its folder (model.onnx, metadata.txt,
    outputs.json), all exported in one run of the venv unless cached."""
    key = _sha(
        REQUIREMENTS.read_bytes(), HEADS_SCRIPT.read_bytes(), *(s.encode() for s in specs),
        *(p.read_bytes() for p in photos),
    )  # fmt: skip
    folder = cache_root() / "exports" / f"heads-{key}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    names = {spec: f"{spec.split(':')[0]}-{spec.split(':')[1]}" for spec in specs}
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((folder / n / "outputs.json").is_file() for n in names.values()):
            staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
            try:
                arguments = [str(staging), *specs, "--", *(str(p) for p in photos)]
                run_script(HEADS_SCRIPT, arguments, timeout=1200)
                shutil.rmtree(folder, ignore_errors=True)
                staging.rename(folder)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return {spec: folder / name for spec, name in names.items()}


def ultralytics_predictions(
    url: str,
    images: list[Path],
    *,
    conf: float,
    iou: float,
    imgsz: int,
    rect: bool,
    task: str = "detect",
    family: str = "yolo",
) -> dict[str, Any]:
    """Ultralytics' own predictions through Triton (predict.py's answer)."""
    request = {"url": url, "images": [str(p) for p in images], "conf": conf, "iou": iou}
    request.update(imgsz=imgsz, rect=rect, task=task, family=family)
    answer: dict[str, Any] = json.loads(run_script(PREDICT_SCRIPT, [], json.dumps(request)))
    return answer
