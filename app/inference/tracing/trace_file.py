"""Triton's trace files read as the server writes them.

With `log_frequency` N the server writes every N traces to a new file `PATH.0`, `PATH.1`, ...
(PATH is its `trace_file` setting); the app sets N to 1, so each request's trace is a file
of its own, written when the request ends. `TraceFileReader.poll()` reads the files that
appeared since the last poll:

- incremental: a file is read once; the files that were there before the reader started
  (earlier runs, other clients) are left alone;
- tolerant of a file being written: one that does not parse yet is tried again at the next
  poll, and given up (counted in `unreadable`) only once it has stopped growing for
  `settle_s` and still does not parse;
- bounded: a file over `max_file_bytes` is skipped (counted), the memory of which files were
  read is a watermark plus the few above it, and `consume=True` (the embedded server's own
  private folder) deletes each file once read, so a long traced run does not fill the disk.

No Qt, no threads of its own: the caller polls it (from an executor, never the GUI thread).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.inference.tracing.server_trace import ServerTrace, traces_from_entries

MAX_FILE_BYTES = 32 * 2**20
SETTLE_S = 5.0


@dataclass
class _Pending:
    size: int
    since: float  # when it was last seen growing (monotonic seconds)


@dataclass
class TraceFileReader:
    base: Path  # the server's trace_file setting: files are base.0, base.1, ...
    consume: bool = False
    settle_s: float = SETTLE_S
    max_file_bytes: int = MAX_FILE_BYTES
    unreadable: int = 0  # files given up (never parsed, or too large)
    _watermark: int = 0  # every index below it is done
    _done: set[int] = field(default_factory=set)
    _pending: dict[int, _Pending] = field(default_factory=dict)
    _pattern: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.base = Path(self.base)
        self._pattern = re.compile(re.escape(self.base.name) + r"\.(\d+)$")
        # What is there already belongs to earlier requests: start after it.
        existing = self._indices()
        self._watermark = max(existing, default=-1) + 1

    def _indices(self) -> list[int]:
        try:
            names = os.listdir(self.base.parent)
        except OSError:
            return []
        return [int(m.group(1)) for m in map(self._pattern.match, names) if m]

    def _finish(self, index: int) -> None:
        self._pending.pop(index, None)
        self._done.add(index)
        while self._watermark in self._done:
            self._done.discard(self._watermark)
            self._watermark += 1

    def _path(self, index: int) -> Path:
        return self.base.with_name(f"{self.base.name}.{index}")

    def poll(self, now: float | None = None) -> list[ServerTrace]:
        """The traces in the files written since the last poll (roots, children nested)."""
        now = time.monotonic() if now is None else now
        found: list[ServerTrace] = []
        for index in sorted(i for i in self._indices() if i >= self._watermark and i not in self._done):
            traces = self._read(index, now)
            if traces is not None:
                found.extend(traces)
        return found

    def _read(self, index: int, now: float) -> list[ServerTrace] | None:
        path = self._path(index)
        try:
            size = path.stat().st_size
            if size > self.max_file_bytes:
                self.unreadable += 1
                self._finish(index)
                return None
            text = path.read_text(encoding="utf-8", errors="replace")
            entries = json.loads(text)
        except FileNotFoundError:
            self._finish(index)  # someone else consumed it
            return None
        except (OSError, ValueError):
            self._wait_or_give_up(index, path, now)
            return None
        self._finish(index)
        if self.consume:
            with contextlib.suppress(OSError):
                path.unlink()
        return traces_from_entries(entries if isinstance(entries, list) else [])

    def _wait_or_give_up(self, index: int, path: Path, now: float) -> None:
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        pending = self._pending.get(index)
        if pending is None or pending.size != size:
            self._pending[index] = _Pending(size, now)
        elif now - pending.since >= self.settle_s:
            self.unreadable += 1
            self._finish(index)

    @property
    def waiting(self) -> int:
        """Files seen but not parsed yet (being written)."""
        return len(self._pending)
