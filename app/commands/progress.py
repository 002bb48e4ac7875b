"""Progress on stderr: `\\r` updates on a terminal, otherwise one line every few seconds.

`Progress`: items done of a total (infer, compare, evaluate); `RequestsLine`: the
percentage and requests of a load sweep (bench, tune), whose total may grow while it runs."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


def time_left(count: int, total: int | None, elapsed: float) -> float | None:
    """Seconds left at the rate so far (None until there is a rate, or without a total)."""
    if total is None or count <= 0 or count >= total or elapsed <= 0:
        return None
    return (total - count) * elapsed / count


def format_seconds(seconds: float) -> str:
    """ "8 s", "2 min 05 s", "1 h 02 min"."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """Thread-safe counters of finished items and a throttled status line.

    `done()` may be called from any thread (result callbacks run on worker threads);
    printing is throttled so it costs nothing at hundreds of results per second.
    """

    def __init__(
        self,
        total: int | None,
        *,
        what: str = "done",
        stream: TextIO | None = None,
        line_interval_s: float = 2.0,
        label: str = "",
    ) -> None:
        self.total = total
        self.what = what
        self.label = label  # e.g. "level 4/5, app": which stage the line is about
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = 0.1 if self.tty else line_interval_s
        self.count = 0
        self.failed = 0
        self.skipped = 0  # inputs that are neither images nor videos (infer): done, not failed
        self.started = time.monotonic()
        self._last_print = self.started
        self._lock = threading.Lock()

    def done(self, ok: bool, *, skipped: bool = False) -> None:
        """One item ended: `ok`, failed, or (`skipped`) not something to send."""
        with self._lock:
            self.count += 1
            if skipped:
                self.skipped += 1
            elif not ok:
                self.failed += 1
            now = time.monotonic()
            if now - self._last_print < self.interval:
                return
            self._last_print = now
            line = self._line(now)
        self._write(line, final=False)

    def note(self, message: str) -> None:
        """A line of its own (e.g. a failure), not overwritten by the status line."""
        with self._lock:
            try:
                self.stream.write(("\r\x1b[K" if self.tty else "") + message + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def finish(self) -> None:
        with self._lock:
            line = self._line(time.monotonic())
        self._write(line, final=True)

    def _line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        line = (
            f"{self.count}{of} {self.what}, {self.count / elapsed:.1f}/s, "
            f"{self.failed} failed{skipped}, {elapsed:.1f} s"
        )
        left = time_left(self.count, self.total, elapsed)
        if left is not None:
            line += f", {format_seconds(left)} left"
        return f"{self.label}: {line}" if self.label else line

    def _write(self, line: str, *, final: bool) -> None:
        try:
            if self.tty:
                self.stream.write("\r\x1b[K" + line + ("\n" if final else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is optional
            pass


class RequestsLine:
    """`[ 57%] 336/536 requests (total +100: a noisy level measured again)` for bench and tune.

    A sweep measures a noisy level again, so its total grows while it runs: the percentage
    shown never goes backwards (it holds until the count catches up with the grown total),
    and the growth is said beside the total rather than passed off as the plan."""

    def __init__(self) -> None:
        self._planned: int | None = None  # the first total seen: the plan's
        self._percent = 0.0

    def percent(self, done: int, total: int) -> float:
        if self._planned is None:
            self._planned = total
        self._percent = max(self._percent, min(100.0, 100.0 * done / max(total, 1)))
        return self._percent

    def requests(self, done: int, total: int) -> str:
        if self._planned is None:
            self._planned = total
        grown = total - self._planned
        more = f" (total +{grown}: a noisy level measured again)" if grown > 0 else ""
        return f"{done}/{total} requests{more}"
