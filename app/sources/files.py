"""Expand command-line inputs (files and folders) into image and video items, by content."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from app.inference.images import is_image_file
from app.sources._magic import looks_like_video, read_head

Kind = Literal["image", "video", "invalid"]


class InputItem(NamedTuple):
    """One input: what it is, or why it cannot be used (kind "invalid", error set)."""

    path: Path
    kind: Kind
    error: str | None = None


def classify(path: Path) -> tuple[Kind, str | None]:
    """Decide by content whether an existing file is an image, a video or neither."""
    try:
        head = read_head(path)
    except OSError as exc:
        return "invalid", f"cannot read {path}: {exc.strerror or exc}"
    if not head:
        return "invalid", f"{path} is empty"
    if is_image_file(path):
        return "image", None
    if looks_like_video(head):
        return "video", None
    return "invalid", f"{path} is neither an image nor a video (unrecognised content)"


def _walk_sorted(folder: Path) -> Iterator[Path]:
    """Every regular file under folder, depth first, names sorted at each level."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            # Do not follow links to folders: a link cycle would never end.
            if entry.is_dir(follow_symlinks=False):
                yield from _walk_sorted(path)
            elif entry.is_file():
                yield path
        except OSError:
            continue


def iter_image_paths(paths: Iterable[str | Path]) -> Iterator[InputItem]:
    """Expand files and folders (recursively, sorted) into image/video items.

    An explicitly given path that is missing, unreadable or not media yields an
    "invalid" item naming the path and the cause; a given folder with no media at
    all yields one too. Non-media files inside folders are skipped silently.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = False
            for child in _walk_sorted(path):
                kind, _error = classify(child)
                if kind != "invalid":
                    found = True
                    yield InputItem(child, kind)
            if not found:
                yield InputItem(path, "invalid", f"folder {path} contains no images or videos")
        elif path.exists():
            kind, error = classify(path)
            yield InputItem(path, kind, error)
        else:
            yield InputItem(path, "invalid", f"{path} does not exist")
