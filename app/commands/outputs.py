"""The files the commands write (--output, --csv, --records, --plots, --write-config): checked
before any inference starts, written whole or not at all (app.system.atomic_files), a write
error a clear message (no traceback) that fails the run.

JSON Lines records stream into a `LineFile`: a write error stops the run at once, the file
ends on a whole record and the message says how many it holds.
"""

from __future__ import annotations

__all__ = ["LineSink", "check_file_output", "check_folder_output", "close_records", "open_records"]

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from app.commands.common import EXIT_FAILED, EXIT_OK, LineSink, UsageError, eprint
from app.pipeline.exports.formats import FORMAT_INFO, ExportFormat
from app.system.atomic_files import LineFile, check_writable, describe_write_error


def check_file_output(option: str, path: str | os.PathLike[str] | None) -> None:
    """UsageError now unless a file can be made in `path`'s folder (None: not asked for)."""
    if path is None or path == "":
        return
    try:
        check_writable(Path(path).parent)
    except OSError as e:
        raise UsageError(f"{option} {os.fspath(path)}: cannot write there ({e.strerror or e})") from None
    if Path(path).is_dir():
        raise UsageError(f"{option} {os.fspath(path)}: is a folder, a file name is expected")


def check_folder_output(option: str, path: str | os.PathLike[str] | None) -> None:
    """UsageError now unless `path` is (or can be made) a folder that takes files."""
    if path is None or path == "":
        return
    if Path(path).exists() and not Path(path).is_dir():
        raise UsageError(f"{option} {os.fspath(path)}: is a file, a folder is expected")
    try:
        check_writable(path, create=True)
    except OSError as e:
        raise UsageError(f"{option} {os.fspath(path)}: cannot write there ({e.strerror or e})") from None


def write_output(option: str, path: str | os.PathLike[str], write: Callable[[], Any]) -> bool:
    """Run `write()` (which writes `path` whole); False, after saying why, when it failed."""
    try:
        write()
    except OSError as e:
        eprint(f"error: {option} {describe_write_error(path, e)}")
        return False
    return True


def open_records(path: str | None, fmt: ExportFormat = ExportFormat.JSONL) -> tuple[TextIO | LineFile, bool]:
    """Where the records go (stdout, or --output's file written whole line by line and renamed
    into place at the end) and whether to close it. A file or folder that cannot be written
    is a usage error now, before any inference."""
    if fmt is not ExportFormat.JSONL:
        folder = FORMAT_INFO[fmt].folder
        if path is None:
            raise UsageError(f"--format {fmt} needs --output {'FOLDER' if folder else 'FILE'}")
        if folder and Path(path).exists() and not Path(path).is_dir():
            raise UsageError(f"--output {path}: --format {fmt} writes one file per image into a folder")
        if folder:
            check_folder_output("--output", path)
        else:
            check_file_output("--output", path)
        return sys.stdout, False  # the summary record
    if path is None:
        return sys.stdout, False
    if Path(path).is_dir():
        raise UsageError(f"--output {path}: is a folder, a file name is expected")
    try:
        return LineFile(path), True
    except OSError as e:
        raise UsageError(f"--output {path}: cannot write it ({e.strerror or e})") from None


def records_failure(stream: object, error: BaseException) -> str:
    """Why the records cannot be written any more; for a file, what it holds (whole lines)."""
    if isinstance(stream, LineFile):
        return (
            f"{describe_write_error(stream.path, error)}; the run stopped there: {stream.path} holds "
            f"the first {stream.lines} record(s), each a whole line"
        )
    return f"cannot write the output: {error}"


def close_records(out: TextIO | LineFile, status: int) -> int:
    """--output's file into place (with the whole records it holds); failing that fails the run."""
    try:
        out.close()
    except OSError as e:
        eprint(f"error: {describe_write_error(getattr(out, 'path', '--output'), e)}")
        return status if status != EXIT_OK else EXIT_FAILED
    return status


def discard_records(out: TextIO | LineFile, status: int) -> int:
    """Nothing was run: --output's temporary file goes, an existing file stays as it was."""
    if isinstance(out, LineFile):
        out.discard()
    else:
        out.close()
    return status
