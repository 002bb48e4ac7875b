"""Files the app reads whole (configs, labels, header files, class maps, dataset files), read
only when they are regular files of at most a stated size.

Checked before anything is read: a FIFO would block the read forever, a device (`/dev/zero`)
never ends, and a /proc or /sys file claims a size of 0 whatever it holds; each is refused by
name. The read itself stops one byte past the limit, so a file that grows while it is read
cannot take more memory either. `parse_json` turns Python's RecursionError on deeply nested
JSON into the same kind of clear error.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

PathLike = str | os.PathLike[str]

MIB = 1 << 20
# The stated bounds (docs/reliability.md lists them). A model config or a header file is a few
# KB; 16 MiB is far beyond any real one and still cheap to parse.
MAX_CONFIG_BYTES = 16 * MIB  # repository load --config
MAX_SMALL_FILE_BYTES = 16 * MIB  # --labels, --header-file, --class-map, classes.txt, data.yaml
MAX_LABEL_FILE_BYTES = 64 * MIB  # one image's labels: YOLO .txt, VOC .xml, labelme .json
MAX_DATASET_FILE_BYTES = 1024 * MIB  # a COCO .json (COCO's train2017 instances: 448 MB)
JSON_DEPTH_NOTE = "nested deeper than the JSON parser allows (about 1,000 levels)"

_KERNEL_FOLDERS = ("/proc/", "/sys/")


class BoundedReadError(ValueError):
    """A file that is not read: the message names it and says why."""


def _size_text(n: int) -> str:
    return f"{n / MIB:.0f} MiB" if n >= MIB else f"{n} bytes"


def check_file(path: PathLike, limit: int, name: str | None = None) -> int:
    """The file's size, after refusing what is not a regular file of at most `limit` bytes.
    `name` is how messages name it ("--labels x.txt"; default: the path)."""
    shown = name or os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BoundedReadError(f"{shown}: not found") from None
    except OSError as exc:
        raise BoundedReadError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise BoundedReadError(f"{shown}: is a folder, not a file")
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        raise BoundedReadError(f"{shown}: a pipe or socket, not a regular file (it is not read)")
    if not stat.S_ISREG(st.st_mode):
        raise BoundedReadError(f"{shown}: a device, not a regular file (it is not read)")
    real = os.path.realpath(path)
    if any(real.startswith(folder) for folder in _KERNEL_FOLDERS):
        raise BoundedReadError(f"{shown}: a file of the kernel's ({real}), not data (it is not read)")
    if st.st_size > limit:
        raise BoundedReadError(
            f"{shown}: too large ({_size_text(st.st_size)}; "
            f"files of at most {_size_text(limit)} are read here)"
        )
    return st.st_size


def read_bytes(path: PathLike, limit: int, name: str | None = None) -> bytes:
    """The whole file, refused (BoundedReadError naming it) unless a regular file of at most
    `limit` bytes, also while it is read."""
    check_file(path, limit, name)
    shown = name or os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise BoundedReadError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > limit:  # grew after the check
        raise BoundedReadError(f"{shown}: too large (files of at most {_size_text(limit)} are read here)")
    return data


def read_text(path: PathLike, limit: int, name: str | None = None, encoding: str = "utf-8") -> str:
    """read_bytes decoded; a file that is not `encoding` is refused naming it."""
    data = read_bytes(path, limit, name)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        shown = name or os.fspath(path)
        kind = encoding.removesuffix("-sig").upper()
        raise BoundedReadError(f"{shown}: not {kind} text ({exc.reason} at byte {exc.start})") from None


def parse_json(text: str | bytes, name: str) -> Any:
    """json.loads; JSONDecodeError as json raises it (callers name the line), and nesting too
    deep for the parser as a BoundedReadError naming `name` instead of a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise BoundedReadError(f"{name}: {JSON_DEPTH_NOTE}") from None
