"""A package installed without its dependencies into a folder of the machine's cache, for a
reference that runs in the product's own venv with that folder on PYTHONPATH (its
dependencies being the venv's own): ddddocr, and onnx for the SCRFD reference.

Once per machine; a lock, so parallel runs install it once; the folder appears whole or not
at all (staged, then renamed).
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.ultralytics.venv import cache_root


def installed_without_deps(requirement: str, marker: str) -> Path:
    """The folder holding `requirement` (e.g. "onnx==1.23.2"), pip-installed now unless
    cached; `marker`: a path inside it that a complete install has."""
    folder = cache_root() / "pkgs" / requirement.replace("==", "-")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / marker).exists():
            return folder
        staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        try:
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", requirement,
                 "--target", str(staging)],
                check=True, capture_output=True, timeout=600,
            )  # fmt: skip
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder
