"""--resume (infer, evaluate): continue a run from the records it already wrote.

A run killed outright (SIGKILL, a power cut) leaves its records in the temporary file beside
its output (`NAME.<8 hex>.part`, app.system.atomic_files.LineFile), each a whole line but
perhaps the last. `--resume` takes the newest such file (or, when there is none, the output
file itself: a run that ended, or was interrupted and closed its file), keeps every whole
record of an input that ended (ok, failed, timed out, skipped; a cancelled one is done
again), copies them into the new run's file and removes the old temporary file: the inputs
they name are not sent again. The new run writes the others; its summary counts both runs.
Every input ends exactly once across the runs: a record is kept once per (source, frame).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.commands.common import UsageError
from app.inference.core.tally import StatusCounts
from app.inference.result import Status
from app.system.atomic_files import PART_SUFFIX

InputKey = tuple[str, int | None]  # a record's (source, frame)
# Statuses that end an input for good; a cancelled one never got its answer: done again.
KEPT = frozenset({Status.OK, Status.FAILED, Status.TIMEOUT, Status.SKIPPED})
# The most a records file may take to be resumed from (read whole: a key per input).
MAX_RECORDS_BYTES = 4 * 2**30


def earlier_parts(path: str | os.PathLike[str]) -> list[Path]:
    """The temporary files earlier runs left beside `path`, newest first."""
    target = Path(path)
    pattern = re.compile(re.escape(target.name) + r"\.[0-9a-f]{8}" + re.escape(PART_SUFFIX))
    try:
        found = [p for p in target.parent.iterdir() if pattern.fullmatch(p.name) and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


@dataclass
class Resumed:
    """What an earlier run left: the lines to keep (as written), the inputs they end."""

    source: Path | None = None  # the file read (None: nothing to resume from)
    lines: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the same, parsed
    done: set[InputKey] = field(default_factory=set)  # of every model (evaluate: `done_by`)
    counts: StatusCounts = field(default_factory=StatusCounts)
    dropped: int = 0  # records not kept: cancelled, a second one of an input, a cut last line
    others: list[Path] = field(default_factory=list)  # older temporary files, left as they are
    seen: set[tuple[Any, str, int | None]] = field(default_factory=set)  # (model, source, frame)

    @property
    def kept(self) -> int:
        return len(self.lines)

    def records_of(self, model: str | None) -> list[dict[str, Any]]:
        """The kept records of one model (evaluate writes its name in each)."""
        return [r for r in self.records if r.get("model") == model]

    def describe(self, option: str) -> str:
        if self.source is None:
            return f"{option} --resume: no earlier records found; starting from the beginning"
        text = f"resuming from {self.source}: {self.kept} input(s) already done"
        if self.dropped:
            text += f" ({self.dropped} record(s) left out: cancelled, repeated or cut short, done again)"
        if self.others:
            text += f"; older temporary files left as they are: {', '.join(str(p) for p in self.others)}"
        return text

    def remove_source(self) -> None:
        """The old temporary file, once its records are in the new run's file."""
        if self.source is not None and self.source.name.endswith(PART_SUFFIX):
            with contextlib.suppress(OSError):
                self.source.unlink()


def find(option: str, path: str | os.PathLike[str] | None) -> Resumed:
    """The records to resume from beside `path` (UsageError when there is no file to name)."""
    if path is None:
        raise UsageError(f"--resume needs {option} FILE: the records of the run to continue")
    parts = earlier_parts(path)
    source = parts[0] if parts else (Path(path) if Path(path).is_file() else None)
    resumed = Resumed(source=source, others=parts[1:])
    if source is None:
        return resumed
    try:
        if source.stat().st_size > MAX_RECORDS_BYTES:
            raise UsageError(f"--resume: {source} is larger than {MAX_RECORDS_BYTES >> 30} GiB")
        with source.open("rb") as f:
            for line in _whole_lines(f):
                _keep(resumed, line)
    except OSError as e:
        raise UsageError(f"--resume: cannot read {source} ({e.strerror or e})") from None
    return resumed


def _whole_lines(f: Any) -> Iterator[bytes]:
    for line in f:
        if line.endswith(b"\n"):
            yield line  # a last line without its end was cut by the kill: left out


def _keep(resumed: Resumed, raw: bytes) -> None:
    try:
        record = json.loads(raw)
    except ValueError:
        resumed.dropped += 1
        return
    if not isinstance(record, dict) or "summary" in record:
        return  # a finished run's summary: the new run writes its own
    status = record.get("status")
    source = record.get("source")
    frame = record.get("frame")
    if not isinstance(source, str) or status not in KEPT or not (frame is None or isinstance(frame, int)):
        resumed.dropped += 1
        return
    key = (record.get("model"), source, frame)  # evaluate's records name the model: A/B has two
    if key in resumed.seen:
        resumed.dropped += 1
        return
    try:
        line = raw.decode("utf-8")  # records are written as UTF-8 (or escaped ASCII)
    except UnicodeDecodeError:
        resumed.dropped += 1
        return
    resumed.seen.add(key)
    resumed.done.add((source, frame))
    resumed.lines.append(line)
    resumed.records.append(record)
    resumed.counts = resumed.counts.add(Status(status))
