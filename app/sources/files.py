"""Expand command-line inputs (files and folders) into items: every entry accounted for.

Each directory entry becomes exactly one item:
- "image" / "video": told by content, whatever the name;
- "failed": meant to be media but unusable: named like an image or video yet unreadable,
  empty, not a regular file (a FIFO would block the reader) or of other content; a
  dangling link; a read or permission error;
- "skipped": neither an image nor a video by name or content (README.txt), a link to a
  folder (not followed: no cycles), a link loop.
An explicitly given path that is not usable media is "failed": the user asked for it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from app.sources.sniff import is_image_head, looks_like_video, read_head

Kind = Literal["image", "video", "failed", "skipped"]

IMAGE_SUFFIXES = frozenset(
    ".jpg .jpeg .jpe .png .bmp .dib .tif .tiff .webp .ppm .pgm .pbm .pnm .pam .jp2 .j2k .hdr .pic"  # noqa: SIM905
    " .gif .heic .avif".split()
)
VIDEO_SUFFIXES = frozenset(
    ".mp4 .m4v .mov .avi .mkv .webm .ts .mts .m2ts .mpg .mpeg .flv .wmv .3gp .ogv".split()  # noqa: SIM905
)


class InputItem(NamedTuple):
    """One input: what it is, or why it cannot be used ("failed"/"skipped": `error` says why)."""

    path: Path
    kind: Kind
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.kind in ("image", "video")


class FileIdentity(NamedTuple):
    """Which version of a file: the same path with another size or modification time is
    other content (a result computed on one must not be shown on the other)."""

    path: str
    size: int
    mtime_ns: int


def file_identity(path: str | Path) -> FileIdentity | None:
    """The identity of the file at `path` now (None when it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileIdentity(os.fspath(path), st.st_size, st.st_mtime_ns)


def named_like_media(path: Path) -> bool:
    suffix = path.suffix.lower()
    return suffix in IMAGE_SUFFIXES or suffix in VIDEO_SUFFIXES


def sniff_kind(path: Path, *, given: bool = False) -> tuple[Kind, str | None]:
    """Decide by content what an entry is. `given`: named by the user (not found in a folder),
    so anything that is not media is a failure rather than a skip."""
    unusable: Kind = "failed" if given or named_like_media(path) else "skipped"
    try:
        st = path.lstat()
    except OSError as exc:
        return "failed", f"{path}: cannot read it ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "skipped", f"{path}: a symbolic link loop"
            if exc.errno == errno.ENOENT:
                return "failed", f"{path}: a dangling symbolic link (its target does not exist)"
            return "failed", f"{path}: cannot follow the link ({exc.strerror or exc})"
        if stat.S_ISDIR(target.st_mode):
            return "skipped", f"{path}: a link to a folder (links to folders are not followed)"
        st = target
    if not stat.S_ISREG(st.st_mode):
        # A FIFO or device would block (or never end) the reader: never open one.
        return unusable, f"{path}: not a regular file (a pipe, socket or device)"
    if st.st_size == 0:
        return unusable, f"{path}: the file is empty"
    try:
        head = read_head(path)
    except OSError as exc:
        return "failed", f"{path}: cannot read it ({exc.strerror or exc})"
    if is_image_head(head):
        return "image", None
    if looks_like_video(head):
        return "video", None
    return unusable, f"{path}: neither an image nor a video (unrecognised content)"


def _listing(folder: Path) -> list[os.DirEntry[str]] | InputItem:
    """The folder's entries sorted by name, or the "failed" item saying why it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError as exc:
        return InputItem(folder, "failed", f"{folder}: cannot list the folder ({exc.strerror or exc})")


def _walk_sorted(folder: Path) -> Iterator[InputItem]:
    """Every entry under folder, depth first, names sorted at each level; folders entered.

    Iterative (a stack of the folders being listed), so a tree of any depth is walked: nested
    generators stopped at Python's recursion limit (about 1,000 levels) and lost everything."""
    first = _listing(folder)
    if isinstance(first, InputItem):
        yield first
        return
    stack = [iter(first)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        path = Path(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)  # links to folders are not entered: no loops
        except OSError as exc:
            yield InputItem(path, "failed", f"{path}: cannot read it ({exc.strerror or exc})")
            continue
        if not is_dir:
            yield InputItem(path, *sniff_kind(path))
            continue
        listed = _listing(path)
        if isinstance(listed, InputItem):
            yield listed
        else:
            stack.append(iter(listed))


def expand_inputs(paths: Iterable[str | Path]) -> Iterator[InputItem]:
    """Expand files and folders (recursively, sorted) into items, one per entry.

    A missing path, or a given folder holding no media at all, yields a "failed" item
    naming the path and the cause (after that folder's skipped entries).
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = False
            for item in _walk_sorted(path):
                found = found or item.usable
                yield item
            if not found:
                yield InputItem(path, "failed", f"folder {path} contains no images or videos")
        elif path.exists() or path.is_symlink():
            yield InputItem(path, *sniff_kind(path, given=True))
        else:
            yield InputItem(path, "failed", f"{path} does not exist")
