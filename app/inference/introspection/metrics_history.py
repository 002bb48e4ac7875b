"""The last few minutes of a server's metrics, for a plot (the viewer's Server view).

A poller (any thread) adds snapshots; a reader (the GUI thread) takes series of
(seconds ago, value) pairs. A lock, because the two run on different threads.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from app.inference.introspection.server_metrics import MetricsSnapshot

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

    def reports_gpu(self) -> bool:
        """Whether the server reported any GPU (the view shows GPU plots only then)."""
        latest = self.latest()
        return latest is not None and bool(latest.gpus)
