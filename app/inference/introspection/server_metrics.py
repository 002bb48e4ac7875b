"""Triton's Prometheus metrics (`GET http://HOST:8002/metrics`): pending requests, CPU
utilisation and memory, and GPU utilisation, memory and power when the server reports
them. Read with `prometheus_client`'s parser of the text exposition format. Blocking (one
HTTP GET, a couple of seconds at most): run it in a worker in the viewer.

A server that does not answer is a state ("not reachable", with the reason), not an
exception: the metrics port is often closed or firewalled while gRPC works.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from app.inference.protocol import Endpoint

DEFAULT_METRICS_PORT = 8002
TIMEOUT_S = 2.0
MAX_BYTES = 16 * 1024 * 1024  # a server with thousands of models still fits


def metrics_url(address: str) -> str:
    """`HOST:PORT`, `http://HOST:PORT` or a full URL -> the URL of the metrics page."""
    text = address.strip()
    if "://" not in text:
        text = f"http://{text}"
    parts = urlsplit(text)
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return f"{parts.scheme}://{parts.netloc}{path}"


def default_metrics_url(endpoint: Endpoint) -> str | None:
    """For a server given by its gRPC address: the same host, Triton's default metrics port
    (None for a gRPC target naming no single host: there is no one page to guess)."""
    host = endpoint.host
    if host is None:
        return None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{DEFAULT_METRICS_PORT}/metrics"


@dataclass(frozen=True)
class GpuFigures:
    gpu: str  # the GPU's uuid as the server labels it
    utilization: float | None  # 0..1
    memory_used_bytes: float | None
    memory_total_bytes: float | None
    power_watts: float | None


@dataclass(frozen=True)
class MetricsSnapshot:
    url: str
    read_at: float  # time.time() of the read
    reachable: bool
    error: str | None = None  # why not reachable (or not understood)
    pending_requests: dict[str, float] = field(default_factory=dict)  # per model, all versions
    cpu_utilization: float | None = None  # 0..1, the server machine's
    cpu_memory_used_bytes: float | None = None
    cpu_memory_total_bytes: float | None = None
    gpus: tuple[GpuFigures, ...] = ()  # empty: the server reports no GPU

    @property
    def total_pending(self) -> float:
        return sum(self.pending_requests.values())

    @property
    def state(self) -> str:
        return "ok" if self.reachable else f"not reachable: {self.error}"


class _Samples:
    """Parsed samples by metric name: [(labels, value)]."""

    def __init__(self, text: str) -> None:
        self.by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                self.by_name.setdefault(sample.name, []).append((dict(sample.labels), float(sample.value)))

    def single(self, name: str) -> float | None:
        values = self.by_name.get(name)
        return values[0][1] if values else None

    def by_label(self, name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for labels, value in self.by_name.get(name, []):
            key = labels.get(label, "")
            out[key] = out.get(key, 0.0) + value
        return out


def parse_metrics(text: str, url: str = "", read_at: float | None = None) -> MetricsSnapshot:
    """A snapshot from the text exposition format (ValueError when it is not that format)."""
    samples = _Samples(text)
    uuids: Iterable[str] = sorted(
        {
            labels.get("gpu_uuid", "")
            for name in samples.by_name
            if name.startswith("nv_gpu_")
            for labels, _ in samples.by_name[name]
        }
    )
    per_gpu = {
        key: samples.by_label(f"nv_gpu_{key}", "gpu_uuid")
        for key in ("utilization", "memory_used_bytes", "memory_total_bytes", "power_usage")
    }
    gpus = tuple(
        GpuFigures(
            gpu=uuid,
            utilization=per_gpu["utilization"].get(uuid),
            memory_used_bytes=per_gpu["memory_used_bytes"].get(uuid),
            memory_total_bytes=per_gpu["memory_total_bytes"].get(uuid),
            power_watts=per_gpu["power_usage"].get(uuid),
        )
        for uuid in uuids
    )
    return MetricsSnapshot(
        url=url,
        read_at=time.time() if read_at is None else read_at,
        reachable=True,
        pending_requests=samples.by_label("nv_inference_pending_request_count", "model"),
        cpu_utilization=samples.single("nv_cpu_utilization"),
        cpu_memory_used_bytes=samples.single("nv_cpu_memory_used_bytes"),
        cpu_memory_total_bytes=samples.single("nv_cpu_memory_total_bytes"),
        gpus=gpus,
    )


class MetricsReader:
    """Reads one server's metrics page; `read()` never raises for a network problem."""

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S) -> None:
        self.url = metrics_url(url)
        self.timeout_s = timeout_s

    def read(self) -> MetricsSnapshot:
        now = time.time()
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout_s) as reply:
                text = reply.read(MAX_BYTES).decode("utf-8", errors="replace")
        except urllib.error.HTTPError as e:
            return MetricsSnapshot(self.url, now, False, f"{self.url} answered HTTP {e.code} {e.reason}")
        except (OSError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            return MetricsSnapshot(self.url, now, False, f"{self.url}: {reason}")
        try:
            return parse_metrics(text, self.url, now)
        except ValueError as e:
            return MetricsSnapshot(self.url, now, False, f"{self.url} is not a Prometheus metrics page ({e})")
