"""The key of a package build: a digest of everything the package is made of, for the build
cache of packaging/build.sh.

Two trees with the same key build the same package: the key covers every file under app/,
resources/ and packaging/ and pyproject.toml (path and content; compiled bytecode aside), the
distributions installed in the building interpreter's environment (name and version:
PyInstaller, PySide6, the tritonserver wheel...), that interpreter's version, the machine's
architecture and the build options (GLIBC_FLOOR, TRITON_VIEWER_*). Prints the key (hex).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("app", "resources", "packaging", "pyproject.toml")
OPTIONS = ("GLIBC_FLOOR", "TRITON_VIEWER_ONEFILE", "TRITON_VIEWER_EMBED_SERVER", "TRITON_VIEWER_NO_ARCHIVE")


def source_files(root: Path = ROOT) -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        top = root / name
        files = [top] if top.is_file() else top.rglob("*")
        found += [
            f
            for f in files
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".pyo")
        ]
    return sorted(found)


def build_key(root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for f in source_files(root):
        digest.update(f.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(f.read_bytes()).digest())
    installed = sorted(
        f"{d.metadata['Name'].lower()}=={d.version}"
        for d in importlib.metadata.distributions()
        if d.metadata["Name"]
    )
    digest.update("\n".join(installed).encode())
    digest.update(f"{sys.version}|{platform.machine()}".encode())
    digest.update("|".join(f"{k}={os.environ.get(k, '')}" for k in OPTIONS).encode())
    return digest.hexdigest()[:24]


if __name__ == "__main__":
    print(build_key())
