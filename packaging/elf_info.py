"""What an ELF file needs from the system it runs on: its NEEDED libraries and the symbol
versions it requires (GLIBC_2.x, GLIBCXX_3.4.x), read with binutils' `objdump -p`.

Used by the PyInstaller spec (which host libraries to leave out) and by check_bundle.py
(the glibc floor of the whole package).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
_VERSION = re.compile(r"^\s*0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)$")
_NUMBERED = re.compile(r"^([A-Z_]+?)_(\d+(?:\.\d+)*)$")


@dataclass
class ElfInfo:
    path: Path
    needed: list[str] = field(default_factory=list)  # DT_NEEDED sonames
    # Highest version required per family: {"GLIBC": (2, 35), "GLIBCXX": (3, 4, 30), ...}
    highest: dict[str, tuple[int, ...]] = field(default_factory=dict)


def version_key(text: str) -> tuple[int, ...]:
    """ "2.35" -> (2, 35)."""
    return tuple(int(part) for part in text.split("."))


def version_text(key: tuple[int, ...]) -> str:
    return ".".join(map(str, key))


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:
        return False


def read_elf(path: Path) -> ElfInfo:
    """NEEDED entries and the highest required version of each symbol-version family."""
    done = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"objdump -p {path} failed: {done.stderr.strip()}")
    info = ElfInfo(path)
    in_references = False
    for line in done.stdout.splitlines():
        stripped = line.strip()
        if stripped.startswith("NEEDED "):
            info.needed.append(stripped.split(None, 1)[1])
        elif stripped == "Version References:":
            in_references = True
        elif in_references:
            match = _VERSION.match(line)
            if not match:
                continue
            numbered = _NUMBERED.match(match.group(1))  # skips GLIBC_PRIVATE and the like
            if numbered:
                family, key = numbered.group(1), version_key(numbered.group(2))
                info.highest[family] = max(info.highest.get(family, key), key)
    return info


def elf_files(root: Path) -> Iterator[Path]:
    """Every regular ELF file under root (symbolic links are not followed or listed)."""
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and is_elf(path):
            yield path


def read_all(paths: Iterable[Path], workers: int = 4) -> list[ElfInfo]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(read_elf, paths))
