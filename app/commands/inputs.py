"""One rule for input paths that do not exist, for every command that reads inputs (infer,
compare, evaluate, bench, tune): refused before any server starts or any request is sent,
each missing path named, exit status 2 (a UsageError). A typo should not cost a server
start, nor show up as one failed record among the others."""

from __future__ import annotations

import os
from collections.abc import Iterable

from app.commands.common import UsageError


def missing_paths(paths: Iterable[str]) -> list[str]:
    """The paths that name nothing (a dangling symbolic link does name something: it is the
    reader's to say why it cannot be read)."""
    return [p for p in paths if not os.path.lexists(p)]


def require_inputs(paths: Iterable[str | None], option: str | None = None) -> None:
    """UsageError "[OPTION ]PATH[, PATH...]: no such file or folder" when any path is missing;
    None entries (an option not given) are left out."""
    missing = missing_paths(p for p in paths if p is not None)
    if missing:
        named = ", ".join(missing)
        raise UsageError(f"{option + ' ' if option else ''}{named}: no such file or folder")
