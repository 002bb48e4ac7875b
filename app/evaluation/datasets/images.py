"""Where a dataset's images are: an index of the image files under a folder, found by their
path without suffix (`sub/photo` finds `sub/photo.jpg`), or by their bare name."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from app.evaluation.datasets.model import OUTSIDE_PATH, Problem
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


def is_inside(path: str | Path, roots: Sequence[str]) -> bool:
    """`path` (made absolute, `..` resolved by name, links not followed: a dataset may link its
    images folder elsewhere) is one of `roots` (absolute, normalised) or under one."""
    text = os.path.normpath(os.path.abspath(path))
    return any(text == root or text.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class ImageIndex:
    """The images under some folders, looked up by relative stem, then by bare stem or name.
    A name a label file gives that leads out of every folder (`../../secret/x.jpg`, an absolute
    path elsewhere) is not followed unless `allow_outside` (`--allow-outside-paths`): a label
    file must not make the app read, and send to a server, files of its choosing."""

    def __init__(self, folders: Sequence[Path], allow_outside: bool = False) -> None:
        self.folders = [f for f in folders if f.is_dir()]
        self.allow_outside = allow_outside
        self.roots_abs = [os.path.normpath(os.path.abspath(f)) for f in folders]
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

    def escapes(self, name: str | Path, base: Path | None = None) -> bool:
        """`name` (relative to `base`, else to each folder) leads out of every folder."""
        text = str(name).replace("\\", "/")
        if base is not None:
            return not is_inside(Path(base, text), self.roots_abs)
        return not any(is_inside(Path(folder, text), self.roots_abs) for folder in self.roots_abs)

    def find(self, name: str) -> Path | None:
        """`name`: a file name or relative path, with or without suffix. A name that leads out
        of the folders is looked up by its bare name inside them (unless `allow_outside`)."""
        rel = PurePosixPath(name.replace("\\", "/"))
        if is_image_name(rel.name):
            for folder in self.folders:
                candidate = Path(folder, *rel.parts)
                if (self.allow_outside or is_inside(candidate, self.roots_abs)) and candidate.is_file():
                    return candidate
            return self._by_name.get(rel.name)
        return self._by_stem.get(str(rel)) or self._by_bare_stem.get(rel.name)


def outside_problem(file: str, where: str, what: str, name: str, index: ImageIndex) -> Problem:
    """The warning for a path a label file gives outside the dataset (counted in the report)."""
    folders = ", ".join(index.roots_abs)
    if index.allow_outside:
        return Problem(
            file,
            where,
            OUTSIDE_PATH,
            f"{what} {name!r} is outside {folders}; read (--allow-outside-paths)",
            0,
        )
    return Problem(
        file,
        where,
        OUTSIDE_PATH,
        f"{what} {name!r} is outside {folders}: not read (--allow-outside-paths reads it); "
        "looked for by its bare name there",
        0,
    )


def display_name(path: Path, roots: Sequence[Path]) -> str:
    """`path` relative to the first root that holds it (posix), else as it is."""
    for root in roots:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            continue
    return str(path)
