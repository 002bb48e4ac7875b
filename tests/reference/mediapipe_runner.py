"""Runs MediaPipe (tests/reference/mediapipe_reference.py) in its own venv, from the product's
tests: one subprocess for a whole list of images."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("mediapipe_reference.py")


def reference_python() -> Path:
    """The MediaPipe venv's interpreter: $MEDIAPIPE_PYTHON, which `make test` sets to the venv it
    keeps in the machine's cache (tests/venv_cache.sh; `make -s reference` builds it and prints its path)."""
    named = os.environ.get("MEDIAPIPE_PYTHON")
    if not named:
        raise RuntimeError(
            "MEDIAPIPE_PYTHON is not set: run `make test`, or MEDIAPIPE_PYTHON=$(make -s reference) pytest"
        )
    # Absolute: the server runs with its own folder as working directory.
    python = Path(named).absolute()
    if not python.is_file():
        raise RuntimeError(f"no MediaPipe venv at {python}: `make -s reference` makes one")
    return python


def run_mediapipe(images: list[Path], max_faces: int = 10, timeout: float = 600) -> dict[str, Any]:
    """MediaPipe's answers for `images` (see mediapipe_reference.py for the layout)."""
    request = json.dumps({"images": [str(p) for p in images], "max_faces": max_faces})
    done = subprocess.run(
        [str(reference_python()), str(SCRIPT)],
        input=request,
        capture_output=True,
        text=True,
        timeout=timeout,
        # Its own interpreter and packages only: nothing of the product's venv leaks in.
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")},
    )
    if done.returncode != 0:
        raise RuntimeError(f"MediaPipe reference failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout)
