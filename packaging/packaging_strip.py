"""Stripped copies of chosen binaries for the bundle (see STRIPPED in triton-viewer.spec)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

Entry = tuple[str, str, str]  # PyInstaller's TOC entry: (name in the bundle, source, type)


def stripped(binaries: Sequence[Entry], prefixes: Sequence[str], folder: Path) -> list[Entry]:
    """`binaries` with each entry whose bundle name starts with one of `prefixes` replaced by
    a copy under `folder` without its symbol table (`strip --strip-unneeded`)."""
    out = []
    for dest, src, kind in binaries:
        if dest.startswith(tuple(prefixes)):
            copy = folder / dest
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy)
            subprocess.run(["strip", "--strip-unneeded", str(copy)], check=True)
            print(f"stripped {dest}: {Path(src).stat().st_size // 1024} -> {copy.stat().st_size // 1024} KiB")
            src = str(copy)
        out.append((dest, src, kind))
    return out
