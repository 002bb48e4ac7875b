"""The last few minutes of a server's metrics, for a plot (the viewer's Server view) or a
summary over an interval (a tune's trial).

A poller (a thread of its own) adds snapshots; a reader (the GUI thread, the tune) takes
series of (seconds ago, value) pairs. A lock, because the two run on different threads.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from app.inference.introspection.server_metrics import MetricsReader, MetricsSnapshot
from app.system.periodic import Periodic

DEFAULT_CAPACITY = 600  # ten minutes at one read a second


def _gpu_mean(snapshot: MetricsSnapshot, key: str) -> float | None:
    values = [getattr(g, key) for g in snapshot.gpus if getattr(g, key) is not None]
    return sum(values) / len(values) if values else None


# What a plot can ask for, by name: one number per snapshot (None: not reported then).
SERIES: dict[str, Callable[[MetricsSnapshot], float | None]] = {
    "pending_requests": lambda s: s.total_pending,
    "cpu_utilization": lambda s: s.cpu_utilization,
    "cpu_memory_used_bytes": lambda s: s.cpu_memory_used_bytes,
    "gpu_utilization": lambda s: _gpu_mean(s, "utilization"),
    "gpu_memory_used_bytes": lambda s: _gpu_mean(s, "memory_used_bytes"),
    "gpu_power_watts": lambda s: _gpu_mean(s, "power_watts"),
}


class MetricsHistory:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._snapshots: deque[MetricsSnapshot] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def add(self, snapshot: MetricsSnapshot) -> None:
        with self._lock:
            self._snapshots.append(snapshot)

    def latest(self) -> MetricsSnapshot | None:
        with self._lock:
            return self._snapshots[-1] if self._snapshots else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._snapshots)

    def series(self, name: str, now: float | None = None) -> list[tuple[float, float]]:
        """(seconds before `now`, value) for the reachable snapshots that report `name`,
        oldest first. KeyError for a name not in SERIES."""
        value_of = SERIES[name]
        now = time.time() if now is None else now
        with self._lock:
            snapshots = list(self._snapshots)
        points = []
        for s in snapshots:
            if not s.reachable:
                continue
            value = value_of(s)
            if value is not None:
                points.append((now - s.read_at, value))
        return points

    def between(self, start: float, end: float) -> list[MetricsSnapshot]:
        """The reachable snapshots read from `start` to `end` (time.time() values)."""
        with self._lock:
            return [s for s in self._snapshots if s.reachable and start <= s.read_at <= end]

    def reports_gpu(self) -> bool:
        """Whether the server reported any GPU (the view shows GPU plots only then)."""
        latest = self.latest()
        return latest is not None and bool(latest.gpus)


class MetricsPoller:
    """Reads a server's metrics every `interval_s` into a history, on a daemon thread of its
    own (the reads block up to the reader's timeout; nobody waits for them). `stop()` is
    idempotent and returns within about one read."""

    def __init__(self, reader: MetricsReader, history: MetricsHistory, interval_s: float = 1.0) -> None:
        self.reader = reader
        self.history = history
        self.interval_s = interval_s
        self._periodic = Periodic(
            lambda: history.add(reader.read()), interval_s, "metrics poller", join_s=reader.timeout_s + 1.0
        )

    def start(self) -> MetricsPoller:
        self._periodic.start()
        return self

    def stop(self) -> None:
        self._periodic.stop()

    def __enter__(self) -> MetricsPoller:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def summary_of(snapshots: list[MetricsSnapshot]) -> dict[str, float | None] | None:
    """Means and peaks over an interval's snapshots (None when there is none): the server's
    CPU utilisation, pending requests, memory; GPU figures only when reported."""
    if not snapshots:
        return None

    def values(key: str) -> list[float]:
        return [v for v in (SERIES[key](s) for s in snapshots) if v is not None]

    def mean(key: str) -> float | None:
        vs = values(key)
        return round(sum(vs) / len(vs), 4) if vs else None

    def peak(key: str) -> float | None:
        vs = values(key)
        return max(vs) if vs else None

    out: dict[str, float | None] = {
        "samples": float(len(snapshots)),
        "cpu_utilization_mean": mean("cpu_utilization"),
        "cpu_utilization_max": peak("cpu_utilization"),
        "pending_requests_max": peak("pending_requests"),
        "cpu_memory_used_bytes_max": peak("cpu_memory_used_bytes"),
    }
    if any(s.gpus for s in snapshots):
        out.update(
            gpu_utilization_mean=mean("gpu_utilization"),
            gpu_memory_used_bytes_max=peak("gpu_memory_used_bytes"),
            gpu_power_watts_mean=mean("gpu_power_watts"),
        )
    return out
