"""Files written whole or not at all (e.g. the tune's CSV, PNG and config.pbtxt): into a temporary
file beside the target, renamed over it once complete, so a failure leaves any previous file
as it was. Blocking: called on the executor."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator

from PySide6.QtGui import QImage, QImageWriter


@contextlib.contextmanager
def replacing_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path to write; renamed over `path` when the block ends without error."""
    target = os.fspath(path)
    tmp = f"{target}.{uuid.uuid4().hex[:8]}.part"
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_whole(path: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """`write(tmp_path)` then the rename; OSError from either reaches the caller."""
    with replacing_path(path) as tmp:
        write(tmp)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)

    write_whole(path, write)


def write_png(path: str | os.PathLike[str], image: QImage) -> None:
    """A PNG whatever the name's suffix (QImage is reentrant: any thread may write a copy)."""

    def write(tmp: str) -> None:
        writer = QImageWriter(tmp, b"png")
        if not writer.write(image):
            raise OSError(writer.errorString())

    write_whole(path, write)
