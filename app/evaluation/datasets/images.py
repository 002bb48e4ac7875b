"""Where a dataset's images are: an index of the image files under a folder, found by their
path without suffix (`sub/photo` finds `sub/photo.jpg`), or by their bare name."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from app.sources.files import IMAGE_SUFFIXES


def is_image_name(path: str | Path) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def walk_files(folder: Path, suffixes: Iterable[str]) -> list[Path]:
    """Files under `folder` (recursively, sorted, links to folders not followed) whose suffix
    is one of `suffixes` (lower case, with the dot)."""
    wanted = set(suffixes)
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if Path(name).suffix.lower() in wanted:
                found.append(Path(root) / name)
    return found


class ImageIndex:
    """The images under some folders, looked up by relative stem, then by bare stem or name."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = [f for f in folders if f.is_dir()]
        self._by_stem: dict[str, Path] = {}
        self._by_name: dict[str, Path] = {}
        self._by_bare_stem: dict[str, Path] = {}
        self.images: list[Path] = []
        for folder in self.folders:
            for path in walk_files(folder, IMAGE_SUFFIXES):
                rel = PurePosixPath(path.relative_to(folder).as_posix())
                self.images.append(path)
                self._by_stem.setdefault(str(rel.with_suffix("")), path)
                self._by_name.setdefault(path.name, path)
                self._by_bare_stem.setdefault(path.stem, path)

    def find(self, name: str) -> Path | None:
        """`name`: a file name or relative path, with or without suffix."""
        rel = PurePosixPath(name.replace("\\", "/"))
        if is_image_name(rel.name):
            for folder in self.folders:
                candidate = Path(folder, *rel.parts)
                if candidate.is_file():
                    return candidate
            return self._by_name.get(rel.name)
        return self._by_stem.get(str(rel)) or self._by_bare_stem.get(rel.name)


def display_name(path: Path, roots: Sequence[Path]) -> str:
    """`path` relative to the first root that holds it (posix), else as it is."""
    for root in roots:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            continue
    return str(path)
