"""Where a dataset's images are: an index of the image files under a folder, found by their
path without suffix (`sub/photo` finds `sub/photo.jpg`), or by their bare name."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from app.sources.files import IMAGE_SUFFIXES


def is_image_name(path: str | Path) -> bool:
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def walk_names(folder: str | Path, suffixes: Iterable[str]) -> list[str]:
    """Absolute paths (str: thousands of files, no pathlib cost) of the files under `folder`
    (recursively, sorted, links to folders not followed) whose suffix is one of `suffixes`
    (lower case, with the dot)."""
    wanted = set(suffixes)
    found: list[str] = []
    for root, dirs, files in os.walk(os.path.abspath(folder)):
        dirs.sort()
        for name in sorted(files):
            if os.path.splitext(name)[1].lower() in wanted:
                found.append(os.path.join(root, name))
    return found


def walk_files(folder: Path, suffixes: Iterable[str]) -> list[Path]:
    """walk_names as Paths."""
    return [Path(name) for name in walk_names(folder, suffixes)]


class ImageIndex:
    """The images under some folders, looked up by relative stem, then by bare stem or name."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = [f for f in folders if f.is_dir()]
        self._by_stem: dict[str, Path] = {}
        self._by_name: dict[str, Path] = {}
        self._by_bare_stem: dict[str, Path] = {}
        self.images: list[Path] = []
        self.roots: list[str] = []  # the folders' absolute paths, per image (for relative names)
        for folder in self.folders:
            absolute = os.path.abspath(folder)
            prefix = len(absolute.rstrip(os.sep)) + 1
            for text in walk_names(absolute, IMAGE_SUFFIXES):
                path = Path(text)
                rel = text[prefix:].replace(os.sep, "/")
                name = os.path.basename(text)
                self.images.append(path)
                self.roots.append(absolute)
                self._by_stem.setdefault(os.path.splitext(rel)[0], path)
                self._by_name.setdefault(name, path)
                self._by_bare_stem.setdefault(os.path.splitext(name)[0], path)

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
